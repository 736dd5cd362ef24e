/** Writes into the cache that more than one resource's hooks make. */
import type { QueryClient, QueryKey } from '@tanstack/react-query';

/**
 * Put the item the API answered a write with into its cached list, in place of the one
 * with its name, then reload the list for anything the answer does not show.
 */
export function storeByName<T extends { name: string }>(queryClient: QueryClient, listKey: QueryKey, item: T) {
  queryClient.setQueryData<T[]>(listKey, (items) => items?.map((i) => (i.name === item.name ? item : i)));
  void queryClient.invalidateQueries({ queryKey: listKey });
}
