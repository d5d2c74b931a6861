import { z } from 'zod';
import { AGGREGATION_NAMES } from '../../platform/aggregation.js';
import { ParseError } from '../../platform/errors.js';
import { BEHAVIOR_NAMES, UNITS_NAMES } from '../../platform/signal-info.js';

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

const FieldSchema = z
  .object({
    begin_bit: z.number().int().min(0).max(63),
    end_bit: z.number().int().min(0).max(63),
    function: z.enum(FIELD_FUNCTIONS),
    units: enumOf(UNITS_NAMES),
    scalar: z.number().positive(),
    behavior: enumOf(BEHAVIOR_NAMES),
    writeable: z.boolean(),
    aggregation: enumOf(AGGREGATION_NAMES),
    description: z.string().min(1),
    /** The decoded value of this field (same CPU) multiplies `scalar`: RAPL unit registers. */
    units_from: z.string().regex(FIELD_REF).optional(),
  })
  .strict()
  .refine((f) => f.end_bit >= f.begin_bit, { message: 'end_bit must not be below begin_bit' });

const RegisterSchema = z
  .object({
    offset: z.string().regex(/^0x[0-9a-fA-F]{1,8}$/, 'offset must be a hex string such as "0x610"'),
    domain: z.enum(['cpu', 'core', 'package', 'board']),
    fields: z.record(z.string().regex(NAME), FieldSchema),
  })
  .strict();

const DerivedSchema = z.union([
  z.object({ derivative: z.string().regex(FIELD_REF), description: z.string() }).strict(),
  z
    .object({
      difference: z.tuple([z.string().regex(FIELD_REF), z.string().regex(FIELD_REF)]),
      description: z.string(),
    })
    .strict(),
]);

export const MsrTableSchema = z
  .object({
    match: z
      .object({
        vendor: z.string().min(1),
        families: z.array(z.number().int()).optional(),
        /** Only these models (cpuinfo `model`) of the families: for per-model register quirks. */
        models: z.array(z.number().int()).optional(),
      })
      .strict(),
    msrs: z.record(z.string().regex(NAME), RegisterSchema),
    /** High-level name → `REG:FIELD` (or the name of a derived signal). */
    aliases: z.record(z.string().regex(NAME), z.string()).optional(),
    /** Signals computed from fields: power from an energy counter, temperature below a target. */
    derived: z.record(z.string().regex(NAME), DerivedSchema).optional(),
  })
  .strict();

export type MsrTable = z.infer<typeof MsrTableSchema>;
export type MsrRegister = MsrTable['msrs'][string];
export type MsrField = MsrRegister['fields'][string];
export type MsrDerived = NonNullable<MsrTable['derived']>[string];

/** Validates a table; every problem is named with its path, on one line. */
export function parseMsrTable(data: unknown, what: string): MsrTable {
  const r = MsrTableSchema.safeParse(data);
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
