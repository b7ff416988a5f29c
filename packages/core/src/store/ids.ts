import { randomUUID } from 'node:crypto';

let lastMs = 0;
let counter = 0;
/** The first 15 characters of the ids of millisecond `lastMs`: its timestamp and the version. */
let prefix = '';

/**
 * A time-ordered UUID (version 7), so task ids sort by creation and a task's items go in at the end
 * of the item table's key. Within one millisecond the 12 bits after the timestamp count up (RFC
 * 9562, method 1), so ids made by one process keep their order even when several fall in the same
 * millisecond. The random part is a version-4 UUID's (node pools its random bytes), whose variant
 * bits are already the ones RFC 9562 asks for: a page of a thousand items costs a fraction of a
 * millisecond.
 */
export function uuidv7(): string {
  // 'xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx': the last two groups are kept as they are.
  const random = randomUUID();
  let ms = Date.now();
  if (ms > lastMs) {
    counter = Number.parseInt(random.slice(15, 18), 16) & 0x07ff; // start low in the range, leaving room to count
  } else {
    ms = lastMs; // same millisecond, or the clock went back
    counter++;
    if (counter > 0x0fff) {
      ms++;
      counter = 0;
    }
  }
  if (ms !== lastMs) {
    const time = ms.toString(16).padStart(12, '0');
    prefix = `${time.slice(0, 8)}-${time.slice(8)}-7`;
    lastMs = ms;
  }
  return `${prefix}${counter.toString(16).padStart(3, '0')}${random.slice(18)}`;
}
