import { randomBytes } from 'node:crypto';

let lastMs = 0;
let counter = 0;

// Random bytes drawn 4 KiB at a time (as node's randomUUID does): one call into the CSPRNG per
// 256 ids instead of one per id.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let taken = POOL_BYTES;

function random16(): Buffer {
  if (taken + 16 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    taken = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  pool.copy(bytes, 0, taken, (taken += 16));
  return bytes;
}

/**
 * A time-ordered UUID (version 7), so task ids sort by creation. Within one millisecond the 12
 * bits after the timestamp count up (RFC 9562, method 1), so ids made by one process keep their
 * order even when several fall in the same millisecond.
 */
export function uuidv7(): string {
  const bytes = random16();
  let ms = Date.now();
  if (ms > lastMs) {
    counter = bytes.readUInt16BE(6) & 0x07ff; // start low in the range, leaving room to count
  } else {
    ms = lastMs; // same millisecond, or the clock went back
    counter++;
    if (counter > 0x0fff) {
      ms++;
      counter = 0;
    }
  }
  lastMs = ms;
  bytes.writeUIntBE(ms, 0, 6);
  bytes.writeUInt16BE(0x7000 | counter, 6);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
