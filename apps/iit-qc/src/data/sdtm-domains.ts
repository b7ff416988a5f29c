/**
 * SDTM domain codes of the SDTMIG (3.2 to 3.4) and its trial design and relationship datasets.
 * A rule set for an SDTM study names one of these (or a custom X-, Y-, Z- domain); anything else
 * is a mistake in the rule (a typo) and is refused at upload.
 */
export const SDTM_DOMAINS = new Set([
  'AE', 'AG', 'BE', 'BS', 'CE', 'CM', 'CO', 'CP', 'CV', 'DA', 'DD', 'DM', 'DS', 'DV', 'EC', 'EG', 'EX', 'FA', 'FT', 'GF', 'HO', 'IE', 'IS', 'LB', 'MB', 'MH', 'MI', 'MK', 'ML', 'MO', 'MS', 'NV', 'OE', 'OI', 'PC', 'PE', 'PP', 'PR', 'QS', 'RE', 'RELREC', 'RELSPEC', 'RELSUB', 'RP', 'RS', 'SC', 'SE', 'SM', 'SR', 'SS', 'SU', 'SV', 'TA', 'TD', 'TE', 'TI', 'TM', 'TR', 'TS', 'TU', 'TV', 'UR', 'VS',
]);

/** Trial design datasets: study-wide, no subject. */
export const TRIAL_DESIGN = new Set(['TA', 'TD', 'TE', 'TI', 'TM', 'TS', 'TV']);

export function isSdtmDomain(domain: string): boolean {
  return SDTM_DOMAINS.has(domain) || /^SUPP[A-Z]{2}[A-Z0-9]{0,4}$/.test(domain) || /^[XYZ][A-Z]$/.test(domain);
}
