// Starts the fauxqs SQS emulator bound to 127.0.0.1 only. fauxqs's own start
// command (startFauxqs / `npx fauxqs`) always listens on 0.0.0.0, which would
// expose the emulator to the network; buildApp gives us the same server and
// lets us choose the address. Queue URLs are built from the request's Host
// header, so they point back at 127.0.0.1:PORT.
//
// usage: FAUXQS_PORT=0 node launch.mjs   (0 = any free port)
// Prints one line "fauxqs listening on http://127.0.0.1:PORT" when ready.
import { buildApp } from "fauxqs";

const port = Number.parseInt(process.env.FAUXQS_PORT ?? "0", 10);
const app = buildApp({ logger: false });
const address = await app.listen({ port, host: "127.0.0.1" });
console.log(`fauxqs listening on ${address}`);

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    app.close().finally(() => process.exit(0));
  });
}
