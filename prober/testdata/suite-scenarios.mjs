// Runs some server scenarios of the MCP conformance suite
// (@modelcontextprotocol/conformance) in one Node process: its command line
// takes one scenario or all of them, and loading it costs more than the
// scenarios the agreement test reads. Each scenario is the suite's own
// `server --url URL --scenario S -o OUT`, its module loaded afresh (the
// suite parses its arguments when loaded) and its process.exit caught.
//
// usage: node suite-scenarios.mjs ENTRY URL OUT SCENARIO...
import { pathToFileURL } from "node:url";

const [entry, url, out, ...scenarios] = process.argv.slice(2);
const exit = process.exit;
let failed = 0;
for (const s of scenarios) {
  const code = await new Promise((resolve) => {
    process.exit = resolve;
    process.argv = [process.argv[0], entry, "server", "--url", url, "--scenario", s, "-o", out];
    import(`${pathToFileURL(entry).href}?scenario=${encodeURIComponent(s)}`).catch((err) => {
      console.error(err);
      resolve(2);
    });
  });
  if (code !== 0) failed++;
}
process.exit = exit;
process.exit(failed > 0 ? 1 : 0);
