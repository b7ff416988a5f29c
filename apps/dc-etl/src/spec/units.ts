/// <reference path="../types/ucum-lhc.d.ts" />
import ucum from '@lhncbc/ucum-lhc';

/** `value * scale + offset`: every UCUM conversion is affine (temperatures have an offset). */
export interface Conversion {
  to: string;
  scale: number;
  offset: number;
}

let utils: ReturnType<typeof ucum.UcumLhcUtils.getInstance> | null = null;
const ucumUtils = () => (utils ??= ucum.UcumLhcUtils.getInstance());

/** Whether a code is valid UCUM; the reason when it is not. */
export function ucumProblem(code: string): string | null {
  const result = ucumUtils().validateUnitString(code);
  return result.status === 'valid' ? null : `"${code}" is not a UCUM unit${result.msg[0] ? ` (${result.msg[0]})` : ''}`;
}

/**
 * The conversion from a UCUM unit to the first of `targets` it is commensurable with, or null.
 * Computed once per unit pair from two points (0 and 1), so rows pay a multiply and an add.
 */
export function conversionTo(from: string, targets: readonly string[]): Conversion | null {
  for (const to of targets) {
    const zero = ucumUtils().convertUnitTo(from, 0, to);
    const one = ucumUtils().convertUnitTo(from, 1, to);
    if (zero.status === 'succeeded' && one.status === 'succeeded' && zero.toVal !== null && one.toVal !== null) {
      return { to, scale: one.toVal - zero.toVal, offset: zero.toVal };
    }
  }
  return null;
}
