export { formatGrpcHop, type GrpcHopOptions, type GrpcHopReport, runGrpcHop } from "./grpc-hop.ts";
export {
  type ClosedLoop,
  cpuPercent,
  type Measurement,
  type MeasureOptions,
  measure,
  percentile,
} from "./measure.ts";
export {
  type PgbenchOptions,
  type PgbenchResult,
  parsePgbench,
  ratioToPgbench,
  runPgbench,
} from "./pgbench.ts";
