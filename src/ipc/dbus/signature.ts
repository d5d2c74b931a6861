/**
 * D-Bus type signatures (specification, "Type System" and "Valid Signatures"). Signatures reach
 * the daemon from untrusted peers (message bodies, variants), so every rule is checked and an
 * invalid signature is one InvalidSignatureError naming the reason and position.
 */

/** One complete type: a basic type code, 'v', or a container ('a', '(' struct, '{' dict entry). */
export interface SignatureType {
  readonly type: string;
  /** Element type of an array, fields of a struct or dict entry; empty otherwise. */
  readonly children: readonly SignatureType[];
}

export class InvalidSignatureError extends TypeError {
  constructor(signature: string, reason: string) {
    super(`invalid D-Bus signature ${JSON.stringify(signature.slice(0, 64))}: ${reason}`);
    this.name = 'InvalidSignatureError';
  }
}

export const MAX_SIGNATURE_LENGTH = 255;
/** The specification's limits: at most 32 nested arrays and, separately, 32 nested structs. */
export const MAX_ARRAY_DEPTH = 32;
export const MAX_STRUCT_DEPTH = 32;

const BASIC_TYPES = new Set('ybnqiuxtdhsog');

function isBasic(code: string): boolean {
  return BASIC_TYPES.has(code);
}

class SignatureParser {
  private pos = 0;
  private arrayDepth = 0;
  private structDepth = 0;

  constructor(private readonly signature: string) {}

  parseAll(): SignatureType[] {
    if (this.signature.length > MAX_SIGNATURE_LENGTH) {
      throw new InvalidSignatureError(
        this.signature,
        `${this.signature.length} characters, more than ${MAX_SIGNATURE_LENGTH}`,
      );
    }
    const types: SignatureType[] = [];
    while (this.pos < this.signature.length) types.push(this.completeType(false));
    return types;
  }

  private fail(reason: string, at = this.pos): never {
    throw new InvalidSignatureError(this.signature, `${reason} at position ${at}`);
  }

  private completeType(afterArray: boolean): SignatureType {
    const at = this.pos;
    const code = this.signature[this.pos++];
    if (code === undefined) this.fail('missing type');
    if (isBasic(code) || code === 'v') return { type: code, children: [] };
    switch (code) {
      case 'a': {
        if (++this.arrayDepth > MAX_ARRAY_DEPTH) this.fail(`more than ${MAX_ARRAY_DEPTH} nested arrays`, at);
        if (this.pos >= this.signature.length) this.fail("array 'a' without an element type", at);
        const element = this.completeType(true);
        this.arrayDepth--;
        return { type: 'a', children: [element] };
      }
      case '(': {
        if (++this.structDepth > MAX_STRUCT_DEPTH)
          this.fail(`more than ${MAX_STRUCT_DEPTH} nested structs`, at);
        const fields: SignatureType[] = [];
        while (this.signature[this.pos] !== ')') {
          if (this.pos >= this.signature.length) this.fail("struct '(' is not closed", at);
          fields.push(this.completeType(false));
        }
        if (fields.length === 0) this.fail('empty struct', at);
        this.pos++;
        this.structDepth--;
        return { type: '(', children: fields };
      }
      case '{': {
        if (!afterArray) this.fail("dict entry '{' outside an array", at);
        if (this.pos >= this.signature.length) this.fail("dict entry '{' is not closed", at);
        if (!isBasic(this.signature[this.pos]!)) this.fail('dict entry key is not a basic type');
        const key = this.completeType(false);
        if (this.pos >= this.signature.length || this.signature[this.pos] === '}') {
          this.fail('dict entry without a value type');
        }
        const value = this.completeType(false);
        if (this.pos >= this.signature.length) this.fail("dict entry '{' is not closed", at);
        if (this.signature[this.pos] !== '}') this.fail('dict entry with more than two types');
        this.pos++;
        return { type: '{', children: [key, value] };
      }
      case ')':
      case '}':
        return this.fail(`unexpected '${code}'`, at);
      default:
        return this.fail(`unknown type code ${JSON.stringify(code)}`, at);
    }
  }
}

/** Parses a signature into its complete types; throws InvalidSignatureError. */
export function parseSignature(signature: string): SignatureType[] {
  return new SignatureParser(signature).parseAll();
}

/**
 * Parsed signatures, bounded: peers choose signatures freely, so the cache is emptied when full
 * instead of growing; the few signatures in steady use come back at once.
 */
const CACHE_LIMIT = 256;
const cache = new Map<string, readonly SignatureType[]>();

/** parseSignature, cached. The result is shared: callers must not modify it. */
export function parseTypes(signature: string): readonly SignatureType[] {
  let types = cache.get(signature);
  if (!types) {
    types = parseSignature(signature);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(signature, types);
  }
  return types;
}

/** The one complete type of a variant's signature; throws unless there is exactly one. */
export function parseSingleType(signature: string): SignatureType {
  const types = parseTypes(signature);
  if (types.length !== 1) {
    throw new InvalidSignatureError(signature, `a variant holds one complete type, not ${types.length}`);
  }
  return types[0]!;
}
