import { AGGREGATION_NAMES } from '../../platform/aggregation.js';
import { ParseError } from '../../platform/errors.js';
import { BEHAVIOR_NAMES, UNITS_NAMES } from '../../platform/signal-info.js';
import * as z from '../../platform/validation.js';

/**
 * MSR tables: GEOPM's msrs.schema.json shape (msrs.<REG>.{offset, domain, fields.<F>.{begin_bit,
 * end_bit, function, units, scalar, behavior, writeable, aggregation, description}}) plus what
 * GEOPM keeps in code: which CPUs a table is for (`match`), field scaling by a unit register
 * (`units_from`), high-level aliases and derived signals.
 */
const NAME = /^[A-Z][A-Z0-9_]*$/;
const FIELD_REF = /^[A-Z][A-Z0-9_]*:[A-Z][A-Z0-9_]*$/;
const enumOf = (names: readonly string[]) => z.enum(names as [string, ...string[]]);

export const FIELD_FUNCTIONS = ['scale', 'log_half', '7_bit_float', 'overflow', 'logic'] as const;
export type FieldFunction = (typeof FIELD_FUNCTIONS)[number];

const name = () => z.string().check(z.regex(NAME));
const fieldRef = () => z.string().check(z.regex(FIELD_REF));
const bit = () => z.int().check(z.minimum(0), z.maximum(63));

// Built on first use: the schema is only needed where MSR tables are read, and building it
// costs every CLI start a few milliseconds otherwise.
function buildMsrTableSchema() {
  const FieldSchema = z
    .strictObject({
      begin_bit: bit(),
      end_bit: bit(),
      function: z.enum(FIELD_FUNCTIONS),
      units: enumOf(UNITS_NAMES),
      scalar: z.number().check(z.positive()),
      behavior: enumOf(BEHAVIOR_NAMES),
      writeable: z.boolean(),
      aggregation: enumOf(AGGREGATION_NAMES),
      description: z.string().check(z.minLength(1)),
      /** The decoded value of this field (same CPU) multiplies `scalar`: RAPL unit registers. */
      units_from: z.optional(fieldRef()),
    })
    .check(z.refine((f) => f.end_bit >= f.begin_bit, 'end_bit must not be below begin_bit'));

  const RegisterSchema = z.strictObject({
    offset: z.string().check(z.regex(/^0x[0-9a-fA-F]{1,8}$/, 'offset must be a hex string such as "0x610"')),
    domain: z.enum(['cpu', 'core', 'package', 'board']),
    fields: z.record(name(), FieldSchema),
  });

  const DerivedSchema = z.union([
    z.strictObject({ derivative: fieldRef(), description: z.string() }),
    z.strictObject({ difference: z.tuple([fieldRef(), fieldRef()]), description: z.string() }),
  ]);

  return z.strictObject({
    match: z.strictObject({
      vendor: z.string().check(z.minLength(1)),
      families: z.optional(z.array(z.int())),
      /** Only these models (cpuinfo `model`) of the families: for per-model register quirks. */
      models: z.optional(z.array(z.int())),
    }),
    msrs: z.record(name(), RegisterSchema),
    /** High-level name → `REG:FIELD` (or the name of a derived signal). */
    aliases: z.optional(z.record(name(), z.string())),
    /** Signals computed from fields: power from an energy counter, temperature below a target. */
    derived: z.optional(z.record(name(), DerivedSchema)),
  });
}
let schema: ReturnType<typeof buildMsrTableSchema> | undefined;

export type MsrTable = z.infer<ReturnType<typeof buildMsrTableSchema>>;
export type MsrRegister = MsrTable['msrs'][string];
export type MsrField = MsrRegister['fields'][string];
export type MsrDerived = NonNullable<MsrTable['derived']>[string];

/** Validates a table; every problem is named with its path, on one line. */
export function parseMsrTable(data: unknown, what: string): MsrTable {
  schema ??= buildMsrTableSchema();
  const r = schema.safeParse(data);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
    throw new ParseError(`${what}: invalid MSR table: ${issues}`);
  }
  const table = r.data;
  const fieldExists = (ref: string) => {
    const [reg, field] = ref.split(':') as [string, string];
    return table.msrs[reg]?.fields[field] !== undefined;
  };
  const refs: string[] = [];
  for (const [reg, def] of Object.entries(table.msrs)) {
    for (const [field, f] of Object.entries(def.fields))
      if (f.units_from) refs.push(`msrs.${reg}.${field}.units_from=${f.units_from}`);
  }
  for (const [name, d] of Object.entries(table.derived ?? {})) {
    const used = 'derivative' in d ? [d.derivative] : d.difference;
    for (const u of used) refs.push(`derived.${name}=${u}`);
  }
  for (const [alias, target] of Object.entries(table.aliases ?? {})) {
    if (!(table.derived && target in table.derived)) refs.push(`aliases.${alias}=${target}`);
  }
  const unknown = refs.filter((r) => !fieldExists(r.split('=')[1]!));
  if (unknown.length > 0)
    throw new ParseError(`${what}: unknown MSR field referenced by ${unknown.join(', ')}`);
  return table;
}
