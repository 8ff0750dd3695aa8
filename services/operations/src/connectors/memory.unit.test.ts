import { describeConnector } from "../../test/contracts/connector.contract.ts";
import { MemoryConnector } from "./memory.ts";

describeConnector("MemoryConnector", async () => {
  const connector = new MemoryConnector();
  /** The providers configured so far: the controls below find an operation at whichever has it. */
  const names = new Set<string>();
  return {
    connector,
    provider: async (name, settings) => {
      names.add(name);
      return connector.register(name, settings);
    },
    unreachable: () => ({
      name: "gone",
      kind: "memory",
      baseUrl: "memory://gone",
      credentials: "x",
      methods: [],
    }),
    callbackUrl: "memory://callbacks",
    settle: async (operationId, result) => {
      for (const name of names) {
        const settled = connector.settle(name, operationId, result);
        if (!("refused" in settled) || settled.refused !== "not_found") return settled;
      }
      return { refused: "not_found" };
    },
    received: async (operationId) => [...names].flatMap((name) => connector.received(name, operationId)),
  };
});
