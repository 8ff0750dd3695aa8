import type {
  ProviderAnswer,
  ProviderConfig,
  ProviderResult,
  ProviderStatus,
  WithdrawAnswer,
} from "../connectors/connector.ts";
import type { CascadeAnswer } from "../domain/cascade.ts";

/** A provider's answers to the cascade's questions, read as the decider (domain/cascade.ts) takes them. */

export type Accepted = {
  provider: ProviderConfig;
  answer: Extract<ProviderAnswer, { outcome: "accepted" }>;
  /** A result the provider already reached (found by the status question), applied once recorded. */
  result?: ProviderResult;
  /**
   * Whether the pool was on the route that found the provider, when that route is the only
   * one the operation ever had (its first attempt); unknown counts as on it.
   */
  poolOnRoute?: boolean;
};

/** A status read as the cascade takes it; `holds` when the provider holds the operation. */
export function readStatus(
  provider: ProviderConfig,
  operationId: string,
  status: ProviderStatus,
): { answer: CascadeAnswer; holds?: Accepted } {
  switch (status.status) {
    case "pending":
      return { answer: "accepted", holds: takenBy(provider, undefined) };
    case "completed":
      return { answer: "accepted", holds: takenBy(provider, { ...status, operationId }) };
    case "rejected":
      return { answer: "declined" };
    case "withdrawn":
      return { answer: "withdrawn" };
    case "not_found":
      return { answer: "not_found" };
    case "unknown":
      return { answer: "unknown" };
  }
}

/**
 * A withdrawal's answer as the cascade takes it: `withdrawn` is a confirmed withdrawal
 * (the key is tombstoned there); a final result decides like a status read; `not_found`
 * (withdrawn nothing, durably) and `not_supported` say the provider offers no withdrawal
 * of a key it has no record of.
 */
export function readWithdrawal(
  provider: ProviderConfig,
  operationId: string,
  withdrawal: WithdrawAnswer,
): { answer: CascadeAnswer; holds?: Accepted } {
  switch (withdrawal.outcome) {
    case "withdrawn":
      return { answer: "withdrawn" };
    case "final":
      return readStatus(provider, operationId, withdrawal.result);
    case "not_found":
    case "not_supported":
      return { answer: "no_withdrawal" };
    case "unknown":
      return { answer: "unknown" };
  }
}

/** A payout a provider was found holding by the status question: accepted by it. */
const takenBy = (provider: ProviderConfig, result: ProviderResult | undefined): Accepted => ({
  provider,
  answer: { outcome: "accepted", receiptRequired: false },
  result,
});
