export { formatGrpcHop, type GrpcHopOptions, type GrpcHopReport, runGrpcHop } from "./grpc-hop.ts";
export {
  type ClosedLoop,
  cpuPercent,
  type Measurement,
  type MeasureOptions,
  measure,
  measureOpenLoop,
  type OpenLoopMeasurement,
  type OpenLoopOptions,
  percentile,
} from "./measure.ts";
export {
  type PgbenchOptions,
  type PgbenchResult,
  parsePgbench,
  ratioToPgbench,
  runPgbench,
} from "./pgbench.ts";
