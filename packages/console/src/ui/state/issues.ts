import type { Issue } from '../api/errors.ts';

export interface PlacedIssues {
  /** Messages by input field name (`documentIds`) or option name (`options.maxFailures`). */
  byField: Record<string, string[]>;
  /** Messages that name no field of the panel. */
  general: string[];
}

/**
 * Places a 400's issues next to the panel's fields: `body.input.documentIds` belongs to the field
 * `documentIds` (also when it points inside it: `body.input.documentIds.3`), `body.options.x` to
 * the option `options.x`; the rest is shown above the submit button.
 */
export function placeIssues(issues: Issue[], fieldNames: readonly string[]): PlacedIssues {
  const placed: PlacedIssues = { byField: {}, general: [] };
  for (const issue of issues) {
    const path = issue.field.replace(/^body\./, '').split('.');
    let name: string | null = null;
    if (path[0] === 'input' && path[1] && fieldNames.includes(path[1])) name = path[1];
    else if (path[0] === 'options' && path[1]) name = `options.${path[1]}`;
    const message = issue.message || issue.rule;
    if (name) (placed.byField[name] ??= []).push(message);
    else placed.general.push(issue.field ? `${issue.field}: ${message}` : message);
  }
  return placed;
}
