import { ApiError } from '../api/client';

/** One line describing any error thrown by the API client or a query. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.unreachable) return error.message;
    return `${error.status}: ${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
