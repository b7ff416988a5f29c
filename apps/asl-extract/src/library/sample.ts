import { randomUUID } from 'node:crypto';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { FileStorage } from './storage.ts';

const DESIGNS = ['randomised controlled trial', 'prospective cohort study', 'cluster randomised trial', 'case-control study', 'cross-sectional study'];
const CONDITIONS = ['type 2 diabetes', 'hypertension', 'chronic kidney disease', 'asthma', 'major depressive disorder', 'heart failure', 'osteoarthritis'];
const TREATMENTS = ['metformin 500 mg twice daily', 'a nurse-led education programme', 'empagliflozin 10 mg', 'inhaled budesonide', 'cognitive behavioural therapy', 'supervised exercise'];
const CONTROLS = ['placebo', 'usual care', 'standard care', 'waiting list'];
const OUTCOMES = ['change in HbA1c at 24 weeks', 'systolic blood pressure at 12 months', 'all-cause mortality', 'exacerbation rate per year', 'PHQ-9 score at 8 weeks'];

/** The text of sample paper `n`: deterministic, in the phrasing of a structured abstract. */
export function samplePaperText(n: number): { title: string; lines: string[] } {
  const pick = <T>(list: T[], salt: number) => list[(Math.imul(n + salt * 131, 2654435761) >>> 0) % list.length]!;
  const design = pick(DESIGNS, 1);
  const condition = pick(CONDITIONS, 3);
  const size = 40 + ((n * 37) % 900);
  const title = `${pick(TREATMENTS, 5).split(' ').slice(0, 3).join(' ')} for ${condition}: paper ${n}`;
  return {
    title,
    lines: [
      title,
      '',
      `Background: ${condition} is common and costly.`,
      `Methods: We conducted a ${design} of ${size} adults with ${condition} in 12 centres.`,
      `Intervention: ${pick(TREATMENTS, 5)}.`,
      `Comparator: ${pick(CONTROLS, 2)}.`,
      `Primary outcome: ${pick(OUTCOMES, 4)}.`,
      'Results: The intervention was well tolerated.',
      'Conclusions: Further research is needed.',
    ],
  };
}

export async function renderPdf(lines: string[]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([595, 842]);
  lines.forEach((line, i) => page.drawText(line, { x: 50, y: 790 - i * 18, size: 11, font }));
  return doc.save({ useObjectStreams: false });
}

/** A PDF whose trailer declares encryption: readers ask for a password it does not have. */
export function encrypt(bytes: Uint8Array): Uint8Array {
  const text = Buffer.from(bytes).toString('latin1');
  const encrypted = text.replace(
    /trailer\s*<</,
    (m) => `${m} /Encrypt << /Filter /Standard /V 1 /R 2 /O <${'11'.repeat(32)}> /U <${'22'.repeat(32)}> /P -4 >> /ID [<${'ab'.repeat(16)}><${'ab'.repeat(16)}>]`,
  );
  return new Uint8Array(Buffer.from(encrypted, 'latin1'));
}

/** What kind of file sample `n` is: most are good; every 23rd is corrupt, every 41st encrypted. */
export const sampleKind = (n: number): 'good' | 'corrupt' | 'encrypted' => (n % 41 === 0 ? 'encrypted' : n % 23 === 0 ? 'corrupt' : 'good');

/** Writes `count` sample papers to storage and the library, for `owner`. Returns their ids. */
export async function createSampleLibrary(prisma: PrismaClient, storage: FileStorage, owner: string, count: number, from = 1): Promise<string[]> {
  const ids: string[] = [];
  const rows = [];
  // Added one after the other, a millisecond apart: the library lists the last paper first.
  const last = Date.now();
  for (let n = from; n < from + count; n++) {
    const { title, lines } = samplePaperText(n);
    const kind = sampleKind(n);
    let bytes = await renderPdf(lines);
    if (kind === 'corrupt') bytes = bytes.slice(0, 300); // truncated mid-file
    if (kind === 'encrypted') bytes = encrypt(bytes);
    const id = randomUUID();
    const storageKey = `${owner}/${id}.pdf`;
    await storage.write(storageKey, bytes);
    rows.push({ id, owner, title, filename: `paper-${String(n).padStart(4, '0')}.pdf`, storageKey, createdAt: new Date(last - (from + count - 1 - n)) });
    ids.push(id);
  }
  await prisma.kbDocument.createMany({ data: rows });
  return ids;
}
