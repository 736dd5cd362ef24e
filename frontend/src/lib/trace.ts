/** The trace id a W3C traceparent names (`00-<trace id>-<span id>-<flags>`), or null when
 * there is none or it is malformed: a job's metadata carries one when tracing is on. */
export function traceIdOf(traceparent: string | undefined): string | null {
  const traceId = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1];
  return traceId && !/^0+$/.test(traceId) ? traceId : null;
}
