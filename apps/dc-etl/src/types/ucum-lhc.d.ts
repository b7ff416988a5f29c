// The part of @lhncbc/ucum-lhc (which ships no types) that the unit conversions use.
declare module '@lhncbc/ucum-lhc' {
  interface ConversionResult {
    status: 'succeeded' | 'failed' | 'error';
    toVal: number | null;
    msg: string[];
  }
  interface UcumLhcUtils {
    convertUnitTo(fromCode: string, fromValue: number, toCode: string): ConversionResult;
    validateUnitString(code: string): { status: 'valid' | 'invalid' | 'error'; msg: string[] };
  }
  const ucum: { UcumLhcUtils: { getInstance(): UcumLhcUtils } };
  export default ucum;
}
