export { llmConfigOf, llmEnv } from './config.ts';
export type { LlmConfig } from './config.ts';
export { chat, chatCompletion, LLM_LIMIT, LLM_RATE_LIMIT, LlmAnswerError, LlmHttpError, LlmRefusalError, parseJsonAnswer, withLlmLimits } from './client.ts';
export type { ChatMessage, ChatRequest } from './client.ts';
export { startSimulatedLlm } from './simulated.ts';
export type { SimulatedLlm, SimulatedLlmOptions } from './simulated.ts';
