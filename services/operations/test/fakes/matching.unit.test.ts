import { describeMatchingContract } from "./matching.contract.ts";
import { FakeMatching } from "./matching.ts";

describeMatchingContract("the fake matching service", async () => new FakeMatching().client());
