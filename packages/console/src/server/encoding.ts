/** The pre-compressed forms the build writes beside each asset, best first. */
export type Encoding = 'br' | 'gzip';

/**
 * The best encoding the request accepts among those available, or null for the plain file.
 * Honours `q=0` ("not this one") and `*`.
 */
export function chooseEncoding(acceptEncoding: string | undefined | null, available: readonly Encoding[]): Encoding | null {
  if (!acceptEncoding) return null;
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let weight = 1;
    for (const p of params) {
      const [k, v] = p.trim().split('=');
      if (k === 'q' && v !== undefined) weight = Number.isNaN(Number(v)) ? 0 : Number(v);
    }
    q.set(name, weight);
  }
  let best: Encoding | null = null;
  let bestWeight = 0;
  for (const encoding of available) {
    const weight = q.get(encoding) ?? q.get('*') ?? 0;
    if (weight > bestWeight) {
      best = encoding;
      bestWeight = weight;
    }
  }
  return best;
}
