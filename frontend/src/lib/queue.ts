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
 * The queues a selector offers: those workers are configured with and those holding
 * queued jobs now (`/jobs/stats/`), plus the one filtered on, sorted and without repeats.
 * Empty unless a queue other than `default` exists: with one queue there is nothing to pick.
 */
export function queueChoices(configured: readonly string[], active: readonly string[], current = ''): string[] {
  const names = new Set([...namedQueues(configured), ...active]);
  if (current !== '') names.add(current);
  const sorted = [...names].sort((a, b) => a.localeCompare(b));
  return sorted.some((q) => q !== 'default') ? sorted : [];
}
