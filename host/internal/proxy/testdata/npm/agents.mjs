// Runs a tool-calling agent of the OpenAI Agents SDK through sextant's
// recording proxy: node agents.mjs BASE_URL API, where API is
// "responses" (the Responses API) or "chat_completions". The agent asks
// for the weather, the model calls get_weather, the agent runs it and the
// model answers with its result. Prints what the agent saw as one JSON
// document.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

const [baseURL, api] = process.argv.slice(2);
setTracingDisabled(true); // no trace export: the machine has no network
setDefaultOpenAIClient(new OpenAI({
  baseURL, apiKey: "sk-not-a-real-key", maxRetries: 0,
  defaultHeaders: { "X-Sextant-Task": "agents-" + api },
}));
setOpenAIAPI(api);

const calls = [];
const getWeather = tool({
  name: "get_weather",
  description: "The current weather in a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    calls.push(city);
    return "sunny and 21 degrees";
  },
});

const agent = new Agent({
  name: "Forecaster",
  instructions: "Answer with the weather tool.",
  model: "gpt-4o-mini",
  tools: [getWeather],
  // A parameter no SDK type names, passed to the model as it is.
  modelSettings: { providerData: { frobnicate: 7 } },
});

const result = await run(agent, "What is the weather in Paris?");
process.stdout.write(JSON.stringify({
  final: result.finalOutput,
  toolCalls: calls,
  items: result.newItems.map((i) => i.type),
  responses: result.rawResponses.map((r) => ({ id: r.responseId, usage: r.usage && { input: r.usage.inputTokens, output: r.usage.outputTokens } })),
}));
