// Times one streaming loop the way every benchmark client does: wall time and this
// process's CPU time (user + system, from the OS) around the loop, the wall-clock moment
// of the first token, and how many tokens and characters arrived.
export async function report(loop) {
  let tokens = 0;
  let chars = 0;
  let first = null;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await loop((text) => {
    if (first === null) first = performance.timeOrigin + performance.now();
    tokens += 1;
    chars += text.length;
  });
  const wall = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  console.log(
    JSON.stringify({
      tokens,
      chars,
      wall_s: wall,
      cpu_s: (used.user + used.system) / 1e6,
      first_token_unix_ns: Math.round((first ?? 0) * 1e6),
    }),
  );
}
