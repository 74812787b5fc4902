// A tool loop on the official Anthropic client through sextant's
// recording proxy: node anthropic-tools.mjs BASE_URL [stream]. The first
// turn is streamed with the messages.stream() helper (the tool's input
// arrives as input_json_delta events), the second, given the tool's
// result, is a whole message. With "stream" both turns are streamed, and
// each stream's events are consumed as they come (for await, and the
// helper's text and inputJson events) before its final message is read.
// Prints what the client saw as one JSON document; toolCalls counts the
// tool's runs.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, mode] = process.argv.slice(2);
const streamed = mode === "stream";
const client = new Anthropic({ baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0 });
const opts = { headers: { "X-Sextant-Task": streamed ? "anthropic-tools-stream" : "anthropic-tools" } };
const tools = [{
  name: "get_weather", description: "The current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}];
const toolCalls = [];
const getWeather = ({ city }) => {
  toolCalls.push(city);
  return city === "Paris" ? "sunny and 21 degrees" : "unknown city";
};

// streamTurn streams one turn, recording what its events showed.
async function streamTurn(messages) {
  const stream = client.messages.stream({ model: "claude-test", max_tokens: 256, tools, messages }, opts);
  const seen = { events: [], text: "", inputJson: [] };
  stream.on("text", (delta) => { seen.text += delta; });
  stream.on("inputJson", (partial) => { seen.inputJson.push(partial); });
  for await (const ev of stream) seen.events.push(ev.type);
  const message = await stream.finalMessage();
  return { message, seen };
}

const messages = [{ role: "user", content: "What is the weather in Paris?" }];
let first, second, seen;
if (streamed) {
  const a = await streamTurn(messages);
  first = a.message;
  seen = [a.seen];
} else {
  first = await client.messages.stream({ model: "claude-test", max_tokens: 256, tools, messages }, opts).finalMessage();
}
messages.push({ role: "assistant", content: first.content });
const results = first.content.filter((b) => b.type === "tool_use").map((b) => ({
  type: "tool_result", tool_use_id: b.id, content: getWeather(b.input),
}));
messages.push({ role: "user", content: results });
if (streamed) {
  const b = await streamTurn(messages);
  second = b.message;
  seen.push(b.seen);
} else {
  second = await client.messages.create({ model: "claude-test", max_tokens: 256, tools, messages }, opts);
}
const out = [
  { id: first.id, stop: first.stop_reason, content: first.content, usage: first.usage },
  { id: second.id, stop: second.stop_reason, content: second.content, usage: second.usage },
];
process.stdout.write(JSON.stringify({ turns: out, seen, toolCalls }));
