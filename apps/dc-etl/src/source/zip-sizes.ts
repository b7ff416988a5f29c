import { open } from 'node:fs/promises';

// A zip's central directory says what each entry inflates to before anything is inflated: enough
// to refuse a workbook whose parts a reader would hold in memory (its shared strings) when they are
// too large, whatever the file's own size. ZIP64 sizes are read from their extra field.

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const ENTRY = 0x02014b50;
const MAX_32 = 0xffffffff;

/** Each entry's name and uncompressed size, from the zip's central directory; null when it has none (not a zip). */
export async function zipEntrySizes(path: string): Promise<Map<string, number> | null> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const read = async (position: number, length: number) => {
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, size - position)));
      await file.read(buffer, 0, buffer.length, position);
      return buffer;
    };
    // The end-of-directory record is in the last 22 bytes plus a comment of at most 64 KB.
    const tailStart = Math.max(0, size - 22 - 0xffff);
    const tail = await read(tailStart, size - tailStart);
    let at = -1;
    for (let i = tail.length - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === EOCD) {
        at = i;
        break;
      }
    }
    if (at === -1) return null;
    let entries = tail.readUInt16LE(at + 10);
    let directorySize = tail.readUInt32LE(at + 12);
    let directoryOffset = tail.readUInt32LE(at + 16);
    if (directoryOffset === MAX_32 || entries === 0xffff) {
      const locator = at >= 20 ? tail.subarray(at - 20, at) : null;
      if (!locator || locator.readUInt32LE(0) !== ZIP64_LOCATOR) return null;
      const record = await read(Number(locator.readBigUInt64LE(8)), 56);
      if (record.length < 56 || record.readUInt32LE(0) !== ZIP64_EOCD) return null;
      entries = Number(record.readBigUInt64LE(32));
      directorySize = Number(record.readBigUInt64LE(40));
      directoryOffset = Number(record.readBigUInt64LE(48));
    }
    if (directoryOffset + directorySize > size) return null;
    const directory = await read(directoryOffset, directorySize);
    const sizes = new Map<string, number>();
    let p = 0;
    for (let n = 0; n < entries && p + 46 <= directory.length && directory.readUInt32LE(p) === ENTRY; n++) {
      let uncompressed = directory.readUInt32LE(p + 24);
      const nameLength = directory.readUInt16LE(p + 28);
      const extraLength = directory.readUInt16LE(p + 30);
      const commentLength = directory.readUInt16LE(p + 32);
      const name = directory.toString('utf8', p + 46, p + 46 + nameLength);
      if (uncompressed === MAX_32) {
        // The ZIP64 extra field (id 1) holds the uncompressed size first.
        const extra = directory.subarray(p + 46 + nameLength, p + 46 + nameLength + extraLength);
        for (let e = 0; e + 4 <= extra.length; e += 4 + extra.readUInt16LE(e + 2)) {
          if (extra.readUInt16LE(e) === 1 && e + 12 <= extra.length) {
            uncompressed = Number(extra.readBigUInt64LE(e + 4));
            break;
          }
        }
      }
      sizes.set(name, (sizes.get(name) ?? 0) + uncompressed);
      p += 46 + nameLength + extraLength + commentLength;
    }
    return sizes;
  } finally {
    await file.close();
  }
}
