import { readFile } from 'node:fs/promises';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { UnreadableFileError } from './table.ts';

/** What the checks derived from define.xml need: per dataset its variables, per variable its codelist. */
export interface DefineMetadata {
  standard: string | null;
  datasets: DefineDataset[];
  codelists: Record<string, { name: string; values: string[] }>;
}

export interface DefineDataset {
  name: string;
  domain: string;
  label: string;
  variables: DefineVariable[];
}

export interface DefineVariable {
  name: string;
  mandatory: boolean;
  dataType: string;
  length: number | null;
  codelist: string | null;
}

const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
const text = (node: unknown): string => {
  const t = (node as { TranslatedText?: unknown } | undefined)?.TranslatedText;
  const first = asArray(t)[0] as unknown;
  return typeof first === 'string' ? first : String((first as { '#text'?: unknown } | undefined)?.['#text'] ?? '');
};

/**
 * Reads a Define-XML 2.0 document: datasets (ItemGroupDef) with their variables in order, whether
 * each is mandatory, its type and length, and the codelists with their coded values.
 */
export async function readDefineXml(path: string): Promise<DefineMetadata> {
  const xml = await readFile(path, 'utf8');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new UnreadableFileError(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`, { rule: 'invalid_xml' });
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', removeNSPrefix: true, parseAttributeValue: false, parseTagValue: false });
  const doc = parser.parse(xml) as { ODM?: { Study?: { MetaDataVersion?: Record<string, unknown> } } };
  const mdv = doc.ODM?.Study?.MetaDataVersion;
  if (!mdv) throw new UnreadableFileError('not a Define-XML document: no ODM/Study/MetaDataVersion element', { rule: 'invalid_define' });
  const items = new Map<string, { Name: string; DataType: string; Length?: string; CodeListRef?: { CodeListOID: string } }>();
  for (const item of asArray(mdv.ItemDef as never)) {
    required(item, 'ItemDef', 'Name');
    items.set(required(item, 'ItemDef', 'OID'), item);
  }
  const codelists: DefineMetadata['codelists'] = {};
  for (const cl of asArray(mdv.CodeList as never) as { OID: string; Name: string; CodeListItem?: unknown; EnumeratedItem?: unknown }[]) {
    required(cl, 'CodeList', 'OID');
    const values = [
      ...asArray(cl.CodeListItem as never).map((i) => String(optional(i, 'CodeListItem', 'CodedValue'))),
      ...asArray(cl.EnumeratedItem as never).map((i) => String(optional(i, 'EnumeratedItem', 'CodedValue'))),
    ];
    codelists[cl.OID] = { name: optional(cl, 'CodeList', 'Name') ?? cl.OID, values };
  }
  const datasets: DefineDataset[] = [];
  for (const group of asArray(mdv.ItemGroupDef as never) as { Name: string; Domain?: string; Description?: unknown; ItemRef?: unknown }[]) {
    required(group, 'ItemGroupDef', 'Name');
    const variables: DefineVariable[] = [];
    for (const ref of asArray(group.ItemRef as never) as { ItemOID: string; Mandatory?: string }[]) {
      const item = items.get(optional(ref, 'ItemRef', 'ItemOID') ?? '');
      if (!item) continue;
      const length = optional(item, 'ItemDef', 'Length');
      variables.push({
        name: item.Name.toUpperCase(),
        mandatory: optional(ref, 'ItemRef', 'Mandatory') === 'Yes',
        dataType: optional(item, 'ItemDef', 'DataType') as string,
        length: length ? Number(length) : null,
        codelist: item.CodeListRef ? (optional(item.CodeListRef, 'CodeListRef', 'CodeListOID') ?? null) : null,
      });
    }
    datasets.push({ name: group.Name.toUpperCase(), domain: (optional(group, 'ItemGroupDef', 'Domain') ?? group.Name).toUpperCase(), label: text(group.Description), variables });
  }
  if (datasets.length === 0) throw new UnreadableFileError('not a Define-XML document: it describes no dataset (ItemGroupDef)', { rule: 'invalid_define' });
  return { standard: optional(mdv, 'MetaDataVersion', 'StandardName') ?? null, datasets, codelists };
}

/** The element as the file's messages name it: its kind, and its OID when it has one. */
function named(element: unknown, kind: string): string {
  const oid = element && typeof element === 'object' ? (element as { OID?: unknown }).OID : undefined;
  return typeof oid === 'string' ? `${kind} ${oid}` : kind;
}

/** An attribute an element must have, as text: else the file is refused, naming the element. */
function required(element: unknown, kind: string, attribute: string): string {
  const value = optional(element, kind, attribute);
  if (value) return value;
  throw new UnreadableFileError(`not a valid Define-XML document: ${named(element, kind)} has no ${attribute} attribute`, { rule: 'invalid_define' });
}

/**
 * An attribute an element may have, as text (undefined when it has none). An element in its place
 * (`<Domain><b/></Domain>` where `Domain="DM"` belongs) refuses the file, naming both.
 */
function optional(element: unknown, kind: string, attribute: string): string | undefined {
  const value = element && typeof element === 'object' ? (element as Record<string, unknown>)[attribute] : undefined;
  if (value === undefined || typeof value === 'string') return value;
  throw new UnreadableFileError(`not a valid Define-XML document: ${named(element, kind)} has ${attribute} as an element, where an attribute of text belongs`, { rule: 'invalid_define' });
}

/** Types of a dataset's variables from define.xml: integer and float are numbers. */
export function defineTypes(define: DefineMetadata | null, dataset: string): Map<string, 'char' | 'num'> {
  const found = define?.datasets.find((d) => d.name === dataset);
  return new Map((found?.variables ?? []).map((v) => [v.name, v.dataType === 'integer' || v.dataType === 'float' ? 'num' : 'char']));
}
