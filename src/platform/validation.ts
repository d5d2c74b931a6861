/**
 * The one place zod is imported from; use it as `import * as z from '…/validation.js'`.
 * Named re-exports of zod/mini let the CLI bundle keep only what is used (about 40 KB instead
 * of 580 KB for zod's classic API with every locale), which every `joulegate` start pays to
 * compile. Only the English messages are loaded.
 */

import { config } from 'zod/mini';
import english from 'zod/v4/locales/en.js';

config(english());

export type { infer, output, ZodMiniType } from 'zod/mini';
export {
  array,
  boolean,
  coerce,
  custom,
  enum,
  int,
  literal,
  maximum,
  minimum,
  minLength,
  nonnegative,
  number,
  object,
  optional,
  overwrite,
  pipe,
  positive,
  record,
  refine,
  regex,
  strictObject,
  string,
  tuple,
  union,
} from 'zod/mini';
