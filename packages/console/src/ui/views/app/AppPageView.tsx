import type { PageSpec } from '../../../config.ts';
import { TablePanelView } from './TablePanelView.tsx';

/** A page of the app's own: its title and its tables. */
export function AppPageView({ page }: { page: PageSpec }) {
  return (
    <div class="app-page">
      <h1 class="page-title">{page.title}</h1>
      {page.panels.map((panel) => (
        <TablePanelView key={panel.title} panel={panel} />
      ))}
    </div>
  );
}
