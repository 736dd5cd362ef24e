/** Workflows: their list and one workflow's members and edges (`/workflows/…`). */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { usePolledQuery, usePollOptions } from '../../polling/usePolledQuery';
import { api } from '../client';
import type { WorkflowListParams } from '../types';
import { queryKeys } from './keys';

/** A page of workflows, polled; the last page stays on screen while another loads. */
export function useWorkflows(params: WorkflowListParams) {
  return usePolledQuery({
    queryKey: queryKeys.workflows(params),
    queryFn: () => api.listWorkflows(params),
    placeholderData: keepPreviousData,
  });
}

/**
 * One workflow with its members and edges. It polls while the workflow is active; once
 * every member has finished nothing changes by itself (a retry invalidates it). Nothing is
 * fetched without an id (a job outside any workflow).
 */
export function useWorkflow(id: string | null | undefined) {
  const poll = usePollOptions();
  return useQuery({
    queryKey: queryKeys.workflow(id ?? ''),
    queryFn: () => api.getWorkflow(id ?? ''),
    enabled: Boolean(id),
    ...poll,
    refetchInterval: (query) => (query.state.data?.state === 'active' ? poll.refetchInterval : false),
  });
}
