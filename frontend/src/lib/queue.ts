/**
 * The API's rule for a queue name (its QueueNameField). /api/config/ publishes the
 * maximum length, which callers pass in; the character rule is not published, so it is
 * written here and the API's 400 stays the authority.
 */
const QUEUE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** Why `name` is not a queue name the API accepts, or null when it is. */
export function queueNameProblem(name: string, maxLength: number): string | null {
  if (name.length > maxLength) return `At most ${maxLength} characters.`;
  if (!QUEUE_NAME_RE.test(name)) return 'Letters, digits and . _ : - only, starting with a letter or digit.';
  return null;
}

/** Queue names a worker is configured with, for suggestions ("*" means all, not a name). */
export function namedQueues(queues: readonly string[]): string[] {
  return queues.filter((q) => q !== '*');
}

/**
 * Every queue the dashboard knows of, for the one queue field's suggestions: `default`,
 * those workers are configured with, those holding queued jobs now (`/jobs/stats/`), and
 * the one filtered on; sorted, once each.
 */
export function queueChoices(configured: readonly string[], active: readonly string[], current = ''): string[] {
  const names = new Set(['default', ...namedQueues(configured), ...active]);
  if (current !== '') names.add(current);
  return [...names].sort((a, b) => a.localeCompare(b));
}
