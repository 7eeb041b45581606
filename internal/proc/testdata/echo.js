// Echoes the agent name and the interpreter (node by extension).
let data = "";
process.stdin.on("data", (c) => (data += c));
process.stdin.on("end", () => {
  const req = JSON.parse(data);
  console.log(JSON.stringify({ agent: req.agent, runtime: "node" }));
});
