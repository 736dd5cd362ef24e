import type { RouteObject } from 'react-router';
import { Layout } from './components/Layout';
import { CreateJobPage } from './pages/CreateJobPage';
import { EventsPage } from './pages/EventsPage';
import { JobDetailPage } from './pages/JobDetailPage';
import { JobsPage } from './pages/JobsPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { OverviewPage } from './pages/OverviewPage';

export const routes: RouteObject[] = [
  {
    element: <Layout />,
    children: [
      { index: true, element: <OverviewPage /> },
      { path: 'jobs', element: <JobsPage /> },
      { path: 'jobs/:id', element: <JobDetailPage /> },
      { path: 'events', element: <EventsPage /> },
      { path: 'create', element: <CreateJobPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
];
