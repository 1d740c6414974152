// What "the page fits its screen" means, checked inside the browser by page.evaluate on every
// page the browser test visits, at a desktop and a phone size. The function is serialised into
// the page, so it uses nothing from this module's scope.

// biome-ignore lint/suspicious/noExplicitAny: DOM objects, read in the page (the tests compile without the DOM lib)
type Dom = any;

/**
 * Every way the open page fails to fit its viewport, one sentence each ([] when it fits):
 * - the page scrolls sideways, or an element sticks out of `<main>` (a table, a cell's text,
 *   a form), except inside a box meant to scroll (`.dag-scroll`, `pre`);
 * - the navigation takes more than one line;
 * - a DAG is drawn smaller than its size, so its labels shrink (it scrolls in its box instead);
 * - a word (letters, digits, `_`) is split across lines although it would fit on one;
 * - an option of a visible select is wider than the select, so it is cut;
 * - a time (in monospace) is shown without its seconds.
 */
export function layoutProblems(): string[] {
  const g = globalThis as Dom;
  const doc = g.document;
  const problems: string[] = [];
  const name = (el: Dom): string => {
    const text = (el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40);
    const classes = typeof el.className === 'string' && el.className !== '' ? `.${el.className.split(' ')[0]}` : '';
    return `<${el.tagName.toLowerCase()}${classes}> "${text}"`;
  };
  // checkVisibility: the content of a closed <details> still has boxes, but is not shown.
  const visible = (el: Dom): boolean => el.checkVisibility();
  const scrollsInBox = (el: Dom): boolean => el.closest('.dag-scroll, pre') !== null;
  const px = (value: string): number => Number.parseFloat(value) || 0;
  const contentBox = (el: Dom): { left: number; right: number; width: number } => {
    const style = g.getComputedStyle(el);
    const rect = el.getBoundingClientRect();
    const left = rect.left + px(style.borderLeftWidth) + px(style.paddingLeft);
    const right = left + el.clientWidth - px(style.paddingLeft) - px(style.paddingRight);
    return { left, right, width: right - left };
  };

  const root = doc.scrollingElement;
  if (root.scrollWidth > root.clientWidth) {
    problems.push(`the page is ${root.scrollWidth}px wide in a ${root.clientWidth}px viewport`);
  }
  const main = doc.querySelector('main');
  const room = contentBox(main);
  for (const el of main.querySelectorAll('*')) {
    if (!visible(el) || scrollsInBox(el) || el.closest('.sr')) continue;
    const rect = el.getBoundingClientRect();
    if (rect.right > room.right + 1 || rect.left < room.left - 1) {
      problems.push(`${name(el)} sticks out of the page (${Math.round(rect.left)}–${Math.round(rect.right)}px)`);
    }
    if ((el.tagName === 'TD' || el.tagName === 'TH') && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} holds ${el.scrollWidth}px in a ${el.clientWidth}px cell`);
    }
  }

  const links = [...doc.querySelectorAll('header.top nav a')];
  const lines = new Set(links.map((a: Dom) => Math.round(a.getBoundingClientRect().top)));
  if (lines.size > 1) problems.push(`the navigation takes ${lines.size} lines`);
  const nav = doc.querySelector('header.top nav');
  if (nav !== null && nav.scrollWidth > nav.clientWidth + 1)
    problems.push(`the navigation is cut (${nav.scrollWidth}px in ${nav.clientWidth}px)`);

  for (const svg of main.querySelectorAll('svg.dag')) {
    const drawn = svg.getBoundingClientRect().width;
    const natural = Number(svg.getAttribute('width'));
    if (drawn < natural - 1) problems.push(`a DAG is drawn at ${Math.round((drawn / natural) * 100)} % of its size`);
  }

  const walker = doc.createTreeWalker(main, 4 /* NodeFilter.SHOW_TEXT */);
  const range = doc.createRange();
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent === null || !visible(parent) || parent.closest('pre, svg, select, textarea, .sr')) continue;
    let block = parent;
    while (g.getComputedStyle(block).display.startsWith('inline') && block.parentElement) block = block.parentElement;
    for (const match of node.data.matchAll(/[A-Za-z0-9_]{2,}/g)) {
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const rects = [...range.getClientRects()].filter((r: Dom) => r.width > 0);
      const tops = new Set(rects.map((r: Dom) => Math.round(r.top)));
      const width = rects.reduce((sum: number, r: Dom) => sum + r.width, 0);
      if (tops.size > 1 && width < contentBox(block).width) {
        problems.push(`"${match[0]}" breaks mid-word in ${name(parent)}`);
      }
    }
  }

  const measure = doc.createElement('canvas').getContext('2d');
  for (const select of main.querySelectorAll('select')) {
    if (!visible(select)) continue;
    const style = g.getComputedStyle(select);
    measure.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    // What the closed select shows: its width less padding and the arrow (about 20px in Chromium).
    const shown = select.clientWidth - px(style.paddingLeft) - px(style.paddingRight) - 20;
    for (const option of select.options) {
      const width = measure.measureText(option.text).width;
      if (width > shown)
        problems.push(`option "${option.text}" of ${select.name} is cut (${Math.round(width)}px in ${shown}px)`);
    }
  }

  for (const el of main.querySelectorAll('.mono')) {
    if (!visible(el)) continue;
    const time = /(?<![\d:])\d\d:\d\d(?!:\d)/.exec(el.textContent ?? '');
    if (time !== null) problems.push(`${name(el)} shows ${time[0]} without seconds`);
  }
  return problems;
}
