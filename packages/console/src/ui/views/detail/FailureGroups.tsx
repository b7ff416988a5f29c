import type { FailureGroup, TaskView } from '../../api/types.ts';
import { formatCount, shortId } from '../../state/format.ts';

/** Failures grouped by error code, biggest first, with a download of the failed items alone. */
export function FailureGroups({ task, groups, downloading, download }: { task: TaskView; groups: FailureGroup[]; downloading: boolean; download(): void }) {
  return (
    <section class="panel" aria-labelledby="failures-heading">
      <div class="section-head">
        <h2 id="failures-heading">Failures by error</h2>
        <button type="button" disabled={downloading} aria-label={`Download failures (CSV) of task ${shortId(task.id)}`} onClick={download}>
          {downloading ? 'Downloading…' : 'Download failures (CSV)'}
        </button>
      </div>
      <div class="table-scroll" role="region" aria-label="Failures by error, table" tabIndex={0}>
        <table>
          <thead>
            <tr>
              <th scope="col">Error code</th>
              <th scope="col" class="num">Items</th>
              <th scope="col" class="num">Retryable</th>
              <th scope="col">Example message</th>
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => (
              <tr key={g.code}>
                <th scope="row">
                  <code>{g.code}</code>
                </th>
                <td class="num">{formatCount(g.count)}</td>
                <td class="num">{formatCount(g.retryable)}</td>
                <td class="wrap">{g.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
