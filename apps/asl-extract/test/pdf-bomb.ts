import { deflateSync } from 'node:zlib';

/**
 * A PDF bomb: a few kilobytes whose one page, once inflated, is `contentMb` MB of text-drawing
 * operators (about 37,000 a MB). pdf.js spends a fifth of a second to a second of CPU per MB on it
 * (as fast and as busy as the machine is) and keeps every piece of text in memory.
 */
export function pdfBomb(contentMb: number): Uint8Array {
  const op = Buffer.from('BT /F1 1 Tf 1 0 0 1 1 1 Tm (A) Tj ET\n');
  const content = Buffer.alloc(contentMb * 1024 * 1024);
  for (let i = 0; i + op.length <= content.length; i += op.length) op.copy(content, i);
  const stream = deflateSync(content, { level: 9 });
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [];
  const offsets: number[] = [];
  let at = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    at += b.length;
  };
  push(Buffer.from('%PDF-1.4\n'));
  objects.forEach((o, i) => {
    offsets.push(at);
    push(Buffer.from(`${i + 1} 0 obj\n${o}\nendobj\n`));
  });
  offsets.push(at);
  push(Buffer.from(`5 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`));
  push(stream);
  push(Buffer.from('\nendstream\nendobj\n'));
  const xref = at;
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  push(Buffer.from(`xref\n0 6\n0000000000 65535 f \n${entries}trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`));
  return new Uint8Array(Buffer.concat(parts));
}
