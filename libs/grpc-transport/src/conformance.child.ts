/**
 * A conformance server in a process of its own, to be killed mid-call: `grpc-js` or
 * `ours` as argv[2]. Sends `{ t: "ready", port }` and then every ServerEvent to the
 * parent over IPC.
 */
import { forwardEvents, startGrpcJsServer, startOurServer } from "./conformance.fixture.ts";

forwardEvents((e) => process.send?.(e));

const server = process.argv[2] === "ours" ? await startOurServer() : await startGrpcJsServer();
process.send?.({ t: "ready", port: server.port });
// The parent may go away without killing us: then stop too.
process.on("disconnect", () => process.exit(0));
