import { ChunkEncoder, type EncodeCounts, type EncodeOptions } from './encode.ts';

/** A chunk's COPY text for staging and for the reject table, and its counts. */
export interface ChunkText {
  counts: EncodeCounts;
  stage: Buffer[];
  rejects: Buffer[];
  /** Indices of the source columns with at least one value in the chunk. */
  filled: number[];
}

/** Encodes a whole chunk at once (tests, benchmarks); children stream it into COPY instead. */
export function chunkText(bytes: Buffer, options: EncodeOptions): ChunkText {
  const encoder = new ChunkEncoder(bytes, options);
  const stage: Buffer[] = [];
  while (encoder.run()) stage.push(...encoder.stage.take());
  stage.push(...encoder.stage.take(true));
  return { counts: encoder.counts, stage, rejects: encoder.rejects.take(true), filled: encoder.filled };
}
