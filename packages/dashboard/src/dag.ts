import dagre from '@dagrejs/dagre';
import { html, type SafeHtml } from './html.js';

/** One node of a drawn DAG. */
export interface DagNode {
  id: string;
  dependsOn: string[];
  /** Colours the node (a task or pipeline status); absent for a definition. */
  status?: string;
  /** A second line under the id: attempts and duration, or the trigger rule. */
  detail?: string;
  /** Where clicking the node leads (the task's section of the page). */
  href?: string;
}

interface GraphBox {
  rankdir?: string;
  width?: number;
  height?: number;
}
interface NodeBox {
  width: number;
  height: number;
  x: number;
  y: number;
}
interface EdgeRoute {
  points?: { x: number; y: number }[];
}

const NODE_HEIGHT = 46;
const CHAR_WIDTH = 7.4;

/**
 * Lays a DAG out with dagre on the server and returns it as inline SVG, left to right, so
 * the browser needs no script and the user no build step. Dependencies on ids that are not
 * in `nodes` are ignored.
 */
export function renderDag(nodes: DagNode[], label: string): SafeHtml {
  if (nodes.length === 0) return html`<p class="muted">No tasks.</p>`;
  const graph = new dagre.graphlib.Graph<GraphBox, NodeBox, EdgeRoute>();
  graph.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  const known = new Set(nodes.map((n) => n.id));
  for (const node of nodes) {
    const chars = Math.max(node.id.length, (node.detail ?? '').length * 0.85, 6);
    graph.setNode(node.id, { width: Math.min(260, Math.round(chars * CHAR_WIDTH + 28)), height: NODE_HEIGHT });
  }
  for (const node of nodes) {
    for (const dep of node.dependsOn) if (known.has(dep)) graph.setEdge(dep, node.id);
  }
  dagre.layout(graph);
  const { width = 0, height = 0 } = graph.graph();
  const edges = graph.edges().map((e: { v: string; w: string }) => {
    const points = graph.edge(e).points ?? [];
    const d = points
      .map((p: { x: number; y: number }, i: number) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`)
      .join(' ');
    return html`<path class="edge" d="${d}" marker-end="url(#arrow)"/>`;
  });
  const drawn = nodes.map((node) => {
    const box = graph.node(node.id);
    const x = box.x - box.width / 2;
    const y = box.y - box.height / 2;
    const status = node.status ?? 'definition';
    const title = node.status === undefined ? node.id : `${node.id}: ${node.status}`;
    const body = html`<g class="node st-${status}" data-task="${node.id}" data-status="${status}">
<title>${title}</title>
<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${box.width}" height="${box.height}" rx="6"/>
<text x="${box.x.toFixed(1)}" y="${(y + 19).toFixed(1)}" class="id">${node.id}</text>
<text x="${box.x.toFixed(1)}" y="${(y + 36).toFixed(1)}" class="sub">${node.detail ?? ''}</text>
</g>`;
    return node.href === undefined ? body : html`<a href="${node.href}" aria-label="${title}">${body}</a>`;
  });
  return html`<div class="dag-scroll"><svg class="dag" role="img" aria-label="${label}" width="${Math.ceil(width)}" height="${Math.ceil(height)}" viewBox="0 0 ${Math.ceil(width)} ${Math.ceil(height)}" xmlns="http://www.w3.org/2000/svg">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>
${edges}${drawn}</svg></div>`;
}
