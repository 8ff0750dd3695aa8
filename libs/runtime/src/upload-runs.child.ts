// The client side of `uploadRunsElsewhere`: runs the uploads it is sent and sends back the result.
import { isErrorJson, type UploadRunsOptions, uploadRuns } from "./testing.ts";

process.once("message", async (m: { options: UploadRunsOptions; expectedCode: string }) => {
  const result = await uploadRuns(m.options, isErrorJson(m.expectedCode));
  process.send?.(result);
});
