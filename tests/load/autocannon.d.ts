// autocannon ships no types; this is the part of its API the load suite uses.
declare module "autocannon" {
  function autocannon(
    options: Record<string, unknown>,
    done: (err: Error | null, result: never) => void,
  ): unknown;
  export default autocannon;
}
