// node:test reporter used by scripts/run-tests.mjs beside the visible one: writes one JSON line
// per skipped test or suite ({ file, name, suite, reason }) so the run can end with a summary of
// what did not run and why. A skipped suite's tests are not reported one by one.
export default async function* skipsReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, file, name, details } = event.data;
    if (skip === undefined || skip === false) continue;
    const reason = typeof skip === 'string' && skip !== '' ? skip : '(no reason given)';
    yield `${JSON.stringify({ file, name, suite: details?.type === 'suite', reason })}\n`;
  }
}
