/** Who took an operator action, as its event's `data.actor` records it. */
import type { JobEvent } from '../api/types';

export interface Actor {
  user: string | null;
  via: string;
}

export function actorOf(event: Pick<JobEvent, 'data'>): Actor | null {
  const actor = (event.data as Record<string, unknown> | null)?.actor;
  if (actor === null || typeof actor !== 'object') return null;
  const { user, via } = actor as Record<string, unknown>;
  return { user: typeof user === 'string' ? user : null, via: typeof via === 'string' ? via : 'api' };
}

/** "by alice (admin)", "by an anonymous user (api)". */
export function describeActor(actor: Actor): string {
  return `by ${actor.user ?? 'an anonymous user'} (${actor.via === 'admin' ? 'admin' : 'dashboard or API'})`;
}
