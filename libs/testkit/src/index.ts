// Test code shared across packages (CONTRIBUTING.md, "Tests"). A service's own test
// harness stays in that service (its `test/` folder); what another package needs of it
// is reached through that service's `exports` ("./testing"), never its `src/`.
export { eventually, failureOf } from "./calls.ts";
export {
  anOperation,
  configFakes,
  type FakeServices,
  memoryLogger,
  OP_ID,
  RECEIPT_FILE,
  RECEIPT_ID,
} from "./fakes.ts";
