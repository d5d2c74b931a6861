/** Where the bundled CLI's loader puts an import() that works (see src/app/joulegate-loader.ts). */
export const HOST_IMPORT = Symbol.for('joulegate.import');

type Importer = (specifier: string) => Promise<unknown>;

/**
 * import() of an ES module named at run time: ESM-only packages loaded on first use (h5wasm)
 * and plugin files. The bundled CLI runs as a vm.Script, whose own import() Node serves
 * only through an experimental hook, so its loader hands in one that works; everywhere else
 * this is plain import().
 */
export async function importModule<T>(specifier: string): Promise<T> {
  const hosted = (globalThis as { [HOST_IMPORT]?: Importer })[HOST_IMPORT];
  return (await (hosted ? hosted(specifier) : import(specifier))) as T;
}
