// The client side of `uploadRunsElsewhere`: runs the uploads it is sent and sends back the result.
import { bodyMatches, type ExpectedBody, type UploadRunsOptions, uploadRuns } from "./testing.ts";

process.once("message", async (m: { options: UploadRunsOptions; expected: ExpectedBody }) => {
  const result = await uploadRuns(m.options, bodyMatches(m.expected));
  process.send?.(result);
});
