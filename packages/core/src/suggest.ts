import { ValidationError } from './errors.js';

/**
 * The valid name closest to a mistyped one, for "did you mean" hints: a name the typo is an
 * abbreviation of (its letters in order, as `tz` in `timezone`) wins, then the smallest edit
 * distance, ignoring case. Undefined when nothing is close enough to be a useful hint.
 */
export function nearestName(typo: string, names: readonly string[]): string | undefined {
  const lower = typo.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const name of names) {
    const candidate = name.toLowerCase();
    const distance = editDistance(lower, candidate);
    // An abbreviation scores by the letters it leaves out, below any plain edit distance.
    const score = isSubsequence(lower, candidate) ? -1 / (1 + candidate.length - lower.length) : distance;
    if (score <= Math.max(2, Math.floor(candidate.length / 3)) && (best === undefined || score < best.score)) {
      best = { name, score };
    }
  }
  return best?.name;
}

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** True when every character of `short` appears in `long`, in order, starting with the first. */
function isSubsequence(short: string, long: string): boolean {
  if (short.length < 2 || short[0] !== long[0]) return false;
  let index = 0;
  for (const char of long) if (char === short[index]) index += 1;
  return index === short.length;
}

/**
 * Refuses a key of `input` that is not in `known`, naming the nearest known one: input
 * objects are checked whole, so a typo (`tz`, `idempotencykey`) is an error instead of an
 * option silently ignored. `what` names one key in the message (`cron schedule field`),
 * `plural` the list (`fields`); `error` is the error's class (a workflow's keys raise
 * WorkflowValidationError).
 * @throws ValidationError (or `error`) for the first unknown key: `Unknown <what> "<key>": did
 *   you mean "<nearest>"? The <plural> are <known>.`
 */
export function assertKnownKeys(
  input: object,
  known: readonly string[],
  what: string,
  plural: string,
  error: new (message: string) => ValidationError = ValidationError,
): void {
  for (const key of Object.keys(input)) {
    if (known.includes(key)) continue;
    const nearest = nearestName(key, known);
    const hint = nearest === undefined ? '' : `did you mean "${nearest}"? `;
    throw new error(`Unknown ${what} "${key}": ${hint}The ${plural} are ${known.join(', ')}.`);
  }
}
