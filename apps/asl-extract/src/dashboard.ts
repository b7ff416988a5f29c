export function dashboardHtml(prefix: string): string { return '<!doctype html><title>ASL</title><p>' + prefix; }
