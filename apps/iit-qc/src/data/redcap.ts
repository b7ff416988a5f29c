import { UnreadableFileError, type Column, type ParsedTable, type Row } from './table.ts';
import { csvHeader, csvRecords, csvRecordsAt } from './csv.ts';

/** One field of a REDCap data dictionary. */
export interface RedcapField {
  name: string;
  form: string;
  type: string;
  label: string;
  /** radio, dropdown, checkbox, yesno, truefalse: the codes and their labels. */
  choices: { code: string; label: string }[];
  /** calc fields: REDCap's calculation. */
  calculation: string | null;
  /** integer, number, date_ymd, email... */
  validation: string | null;
  min: string | null;
  max: string | null;
  required: boolean;
  branching: string | null;
}

export interface RedcapDictionary {
  recordIdField: string;
  forms: string[];
  fields: RedcapField[];
}

const DICTIONARY_HEADER = ['Variable / Field Name', 'Form Name', 'Section Header', 'Field Type', 'Field Label', 'Choices, Calculations, OR Slider Labels'];
const FIELD_TYPES = new Set(['text', 'notes', 'dropdown', 'radio', 'checkbox', 'yesno', 'truefalse', 'calc', 'file', 'slider', 'descriptive', 'sql']);

function choicesOf(type: string, raw: string): { code: string; label: string }[] {
  if (type === 'yesno') return [{ code: '1', label: 'Yes' }, { code: '0', label: 'No' }];
  if (type === 'truefalse') return [{ code: '1', label: 'True' }, { code: '0', label: 'False' }];
  if (!['radio', 'dropdown', 'checkbox'].includes(type) || raw.trim() === '') return [];
  return raw.split('|').map((part) => {
    const comma = part.indexOf(',');
    return comma < 0 ? { code: part.trim(), label: part.trim() } : { code: part.slice(0, comma).trim(), label: part.slice(comma + 1).trim() };
  });
}

/** Reads a REDCap data dictionary (CSV as REDCap exports it): fields, their forms, types, choices and limits. */
export async function readRedcapDictionary(path: string): Promise<RedcapDictionary> {
  const header = await csvHeader(path);
  DICTIONARY_HEADER.forEach((expected, i) => {
    if (header[i] !== expected) throw new UnreadableFileError(`wrong header for a REDCap data dictionary: column ${i + 1} is "${header[i] ?? ''}", expected "${expected}"`, { rule: 'invalid_header' });
  });
  const col = (name: string) => header.indexOf(name);
  const [validation, min, max, required, branching] = ['Text Validation Type OR Show Slider Number', 'Text Validation Min', 'Text Validation Max', 'Required Field?', 'Branching Logic (Show field only if...)'].map(col);
  const fields: RedcapField[] = [];
  let first = true;
  for await (const { fields: r, line } of csvRecordsAt(path)) {
    if (first) {
      first = false;
      continue;
    }
    const type = (r[3] ?? '').trim();
    const name = (r[0] ?? '').trim();
    if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new UnreadableFileError(`line ${line}: "${name}" is not a REDCap variable name`, { rule: 'invalid_value' });
    if (!FIELD_TYPES.has(type)) throw new UnreadableFileError(`line ${line}: field ${name} has an unknown field type "${type}"`, { rule: 'invalid_value' });
    const at = (i: number) => (i >= 0 ? (r[i] ?? '').trim() : '');
    fields.push({
      name,
      form: (r[1] ?? '').trim(),
      type,
      label: (r[4] ?? '').trim(),
      choices: choicesOf(type, r[5] ?? ''),
      calculation: type === 'calc' ? (r[5] ?? '').trim() : null,
      validation: at(validation!) || null,
      min: at(min!) || null,
      max: at(max!) || null,
      required: at(required!).toLowerCase() === 'y',
      branching: at(branching!) || null,
    });
  }
  if (fields.length === 0) throw new UnreadableFileError('the data dictionary lists no field', { rule: 'empty_file' });
  return { recordIdField: fields[0]!.name, forms: [...new Set(fields.map((f) => f.form))], fields };
}

const REDCAP_COLUMNS = new Set(['redcap_event_name', 'redcap_repeat_instrument', 'redcap_repeat_instance', 'redcap_data_access_group', 'redcap_survey_identifier']);

/** The column of a records export that carries a field's value (checkboxes: one column per choice). */
function columnsOf(field: RedcapField): string[] {
  if (field.type === 'descriptive') return [];
  if (field.type === 'checkbox') return field.choices.map((c) => `${field.name}___${c.code.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`);
  return [field.name];
}

/**
 * Reads a REDCap records export (CSV, raw values) against its data dictionary, one dataset per
 * form: each line gives one record per form it has data for (the record id, event, repeat columns,
 * the form's fields and its `_complete` status). Values stay as REDCap exports them (text): a value
 * of the wrong type is a finding (rule C), not a reason to refuse the file. A column that is not a
 * field of the dictionary refuses the file.
 */
export async function readRedcapRecords(path: string, dictionary: RedcapDictionary): Promise<{ forms: Map<string, Column[]>; rows(): AsyncIterable<{ form: string; subject: string; row: Row }> }> {
  const header = await csvHeader(path);
  const formOfColumn = new Map<string, string>();
  for (const field of dictionary.fields) for (const c of columnsOf(field)) formOfColumn.set(c, field.form);
  for (const form of dictionary.forms) formOfColumn.set(`${form}_complete`, form);
  if (header[0] !== dictionary.recordIdField) {
    throw new UnreadableFileError(`wrong header for this project's records: the first column is "${header[0] ?? ''}", expected the record id field "${dictionary.recordIdField}"`, { rule: 'invalid_header' });
  }
  header.forEach((name, i) => {
    if (header.indexOf(name) !== i) throw new UnreadableFileError(`wrong header: "${name}" appears twice`, { rule: 'invalid_header' });
    if (!formOfColumn.has(name) && !REDCAP_COLUMNS.has(name)) throw new UnreadableFileError(`wrong header: "${name}" (column ${i + 1}) is not a field of the data dictionary`, { rule: 'invalid_header' });
  });
  const shared = header.filter((h) => REDCAP_COLUMNS.has(h));
  const forms = new Map<string, Column[]>();
  for (const form of dictionary.forms) {
    const own = header.filter((h) => formOfColumn.get(h) === form && h !== dictionary.recordIdField);
    if (own.length === 0) continue;
    forms.set(form, [dictionary.recordIdField, ...shared, ...own].map((name) => ({ name, label: dictionary.fields.find((f) => f.name === name)?.label ?? '', type: 'char', length: null })));
  }
  return {
    forms,
    async *rows() {
      let first = true;
      for await (const r of csvRecords(path)) {
        if (first) {
          first = false;
          continue;
        }
        const values = new Map(header.map((h, i) => [h, r[i] ?? '']));
        const subject = values.get(dictionary.recordIdField) ?? '';
        for (const [form, columns] of forms) {
          // A line of a longitudinal project carries only the forms of its event: a form with no value
          // at all (and no status) on this line is not a record of that form.
          const has = columns.some((c) => c.name !== dictionary.recordIdField && !REDCAP_COLUMNS.has(c.name) && values.get(c.name) !== '');
          if (!has) continue;
          const row: Row = {};
          for (const c of columns) row[c.name] = values.get(c.name) ?? '';
          yield { form, subject, row };
        }
      }
    },
  };
}

export type { ParsedTable };
