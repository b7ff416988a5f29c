import ExcelJS from 'exceljs';

/** What the Pinnacle 21 report says: per domain and rule, how many issues; the rules it ran; its detail rows. */
export interface P21Report {
  found: Map<string, number>;
  rules: Set<string>;
  details: { domain: string; dataset: string; record: number | null; rule: string; count: number | null }[];
}

const cell = (v: ExcelJS.CellValue): string | number | null => {
  if (v === null || v === undefined) return null;
  if (typeof v === 'object' && 'richText' in v) return v.richText.map((r) => r.text).join('');
  return v as string | number;
};

/** Reads the report's Issue Summary (the found counts), Rules and Details sheets. */
export async function readP21Report(path: string): Promise<P21Report> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const found = new Map<string, number>();
  let domain = '';
  let header = false;
  wb.getWorksheet('Issue Summary')!.eachRow((row) => {
    const v = Array.from((row.values as ExcelJS.CellValue[]).slice(1), cell);
    if (v[0] === 'Source') return void (header = true);
    if (!header) return;
    if (typeof v[0] === 'string' && v[0] === v[1]) return void (domain = v[0]);
    if (v[0] === null && typeof v[1] === 'string' && typeof v[5] === 'number') found.set(`${domain}|${v[1]}`, v[5]);
  });
  const rules = new Set<string>();
  wb.getWorksheet('Rules')!.eachRow((row, n) => {
    if (n > 1) rules.add(String(cell((row.values as ExcelJS.CellValue[])[1])));
  });
  const details: P21Report['details'] = [];
  wb.getWorksheet('Details')!.eachRow((row, n) => {
    if (n === 1) return;
    const v = Array.from((row.values as ExcelJS.CellValue[]).slice(1), cell);
    const source = String(v[0]);
    const m = /^(\w+)(?: \((\w+)\))?$/.exec(source)!;
    details.push({ domain: m[1]!, dataset: m[2] ?? m[1]!, record: typeof v[1] === 'number' ? v[1] : null, rule: String(v[5]), count: typeof v[2] === 'number' ? v[2] : null });
  });
  return { found, rules, details };
}
