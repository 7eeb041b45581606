Feature: Fan-out
  An agent with fan_out runs once per item of a list, each run an instance
  name[i]; its output is the list of the instances' outputs, in item order.

  Scenario: a script runs once per item and gets item, index and count
    Given agent "splitter" responds:
      """
      {"chunks": ["alpha", "beta", "gamma"]}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks", max_parallel: 2}
          dependencies: [splitter]
        - name: reduce
          ask: "reduce?"
          dependencies: [summarize]
      """
    And agent "reduce" responds "done"
    When the ensemble runs
    Then the run has no errors
    And agent "summarize" ran 1 time
    And agent "summarize" ran over 3 items
    And the agents ran in this order: "splitter, summarize[0], summarize[1], summarize[2], summarize, reduce"
    And agent "summarize" took less than 60 seconds
    And agent "summarize[1]" took less than 60.5 seconds
    And instance "summarize[1]" received "beta"
    And the output of agent "summarize[2]" is:
      """
      {"summary": "GAMMA", "position": "3/3", "agent": "summarize"}
      """
    And the output of agent "summarize" is:
      """
      [{"summary": "ALPHA", "position": "1/3", "agent": "summarize"},
       {"summary": "BETA", "position": "2/3", "agent": "summarize"},
       {"summary": "GAMMA", "position": "3/3", "agent": "summarize"}]
      """
    And the input of agent "reduce" contains "GAMMA"
    And the expression "len(filter(history, .of == 'summarize')) == 3" is true

  Scenario: a failed instance contributes null, and its error names the instance
    Given agent "splitter" responds:
      """
      {"chunks": ["alpha", "bad", "gamma"]}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks"}
          dependencies: [splitter]
        - name: retry
          ask: "retry?"
          dependencies:
            - agent_name: summarize
              condition: "any(last(filter(history, .agent_name == 'summarize')).instances, .status == 'failed')"
              select: "map(filter(last(filter(history, .agent_name == 'summarize')).instances, .status == 'failed'), .instance)"
      """
    And agent "retry" responds "retried"
    When the ensemble runs
    Then the run has 1 error
    And agent "summarize[1]" failed with an error containing "cannot summarize this one"
    And agent "summarize" did not fail
    And agent "summarize[0]" did not fail
    And the output of agent "summarize" contains "[{\"agent\":\"summarize\",\"position\":\"1/3\",\"summary\":\"ALPHA\"},null,"
    And the exit code is 1
    And agent "retry" ran 1 time
    And the input of agent "retry" contains "\"summarize\":[1]"
    And the expression "map(history[4].instances, .status) == ['ok', 'failed', 'ok'] && history[4].status == 'ok'" is true

  Scenario: with on_error: fail a failed instance fails the agent
    Given agent "splitter" responds:
      """
      {"chunks": ["alpha", "bad"]}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks", on_error: fail}
          dependencies: [splitter]
        - {name: reduce, ask: "reduce?", dependencies: [summarize]}
      """
    When the ensemble runs
    Then agent "summarize" failed with an error containing "1 of 2 instances failed (fan_out.on_error is fail): summarize[1]"
    And agent "reduce" did not run
    And the final state has no "summarize"

  Scenario: an empty list runs no instance, and the output is []
    Given agent "splitter" responds:
      """
      {"chunks": []}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks"}
          dependencies: [splitter]
      """
    When the ensemble runs
    Then the run has no errors
    And agent "summarize" ran over 0 items
    And the agents ran in this order: "splitter, summarize"
    And the output of agent "summarize" is "[]"

  Scenario: a value that is not a list fails the execution, naming the expression
    Given agent "splitter" responds:
      """
      {"chunks": "one long text"}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks", max_items: 2}
          dependencies: [splitter]
      """
    When the ensemble runs
    Then agent "summarize" failed with an error containing "fan_out.over (context.splitter.chunks) failed: must yield a list, but it returned a string"
    And agent "summarize" ran 1 time

  Scenario: more items than max_items fail the execution
    Given agent "splitter" responds:
      """
      {"chunks": ["a", "b", "c"]}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks", max_items: 2}
          dependencies: [splitter]
      """
    When the ensemble runs
    Then agent "summarize" failed with an error containing "yielded 3 items, more than fan_out.max_items (2)"

  Scenario: injected responses go to the instances in item order; an instance's own entry comes first
    Given agent "splitter" responds:
      """
      {"chunks": ["a", "b", "c"]}
      """
    And agent "summarize" responds "first"
    And agent "summarize" responds "skipped: summarize[1] has its own"
    And agent "summarize" responds "third"
    And agent "summarize[1]" responds "just for one"
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks"}
          dependencies: [splitter]
      """
    When the ensemble runs
    Then the output of agent "summarize" is:
      """
      ["first", "just for one", "third"]
      """

  Scenario: LLM instances each start a fresh conversation with their item
    Given the model replies "summary one" to system prompts containing "summarizer"
    And the model replies "summary two" to system prompts containing "summarizer"
    And agent "splitter" responds:
      """
      {"chunks": ["alpha", "beta"]}
      """
    And the ensemble:
      """
      name: fan-llm
      input: "the whole document"
      models:
        fast:
          provider: openai
          model: fake
          base_url: ${FAKE_MODEL_URL}
          system_prompt: You are a summarizer.
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          model_profile: fast
          fan_out: {over: "context.splitter.chunks"}
          dependencies: [splitter]
          conversation: {max_turns: 2}
      """
    When the ensemble runs
    Then the run has no errors
    And the model was called 2 times for system prompts containing "summarizer"
    And model request 1 for system prompts containing "summarizer" has the roles "system, user"
    And model request 2 for system prompts containing "summarizer" has the roles "system, user"
    And the expression "len(context.summarize) == 2" is true
    And the expression "context.summarize[0] in ['summary one', 'summary two']" is true

  Scenario: a fan-out inside a loop, joined with trigger: all, runs again over the new list
    Given the ensemble:
      """
      name: fan-loop
      agents:
        - {name: seed, ask: "topic?"}
        - name: splitter
          ask: "split?"
          dependencies:
            - seed
            - {agent_name: judge, requires_all: false, condition: "context.judge == 'again'"}
          conversation: {max_turns: 2}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks"}
          dependencies: [splitter]
          conversation: {max_turns: 2}
        - {name: critic, ask: "critique?", dependencies: [summarize], conversation: {max_turns: 2}}
        - name: judge
          ask: "again?"
          trigger: all
          dependencies: [summarize, critic]
          conversation: {max_turns: 2}
      """
    And agent "seed" responds "fan-outs"
    And agent "splitter" responds:
      """
      {"chunks": ["alpha", "beta"]}
      """
    And agent "splitter" responds:
      """
      {"chunks": ["gamma", "delta", "epsilon"]}
      """
    And agent "critic" responds "critique 1"
    And agent "critic" responds "critique 2"
    And agent "judge" responds "again"
    And agent "judge" responds "done"
    When the ensemble runs
    Then the run has no errors
    And agent "summarize" ran 2 times
    And agent "summarize" ran over 3 items
    And instance "summarize[2]" received "epsilon"
    And instance "summarize[0]" received "gamma"
    And the agents ran in this order: "seed, splitter, summarize[0], summarize[1], summarize, critic, judge, splitter, summarize[0], summarize[1], summarize[2], summarize, critic, judge"
    And the input of agent "judge" contains "EPSILON"
    And the input of agent "judge" contains "critique 2"
    And the expression "executions.summarize == 2 && len(filter(history, .of == 'summarize')) == 5" is true

  Scenario: an error handler of a fan-out that failed (on_error: fail) handles its instances' failures too
    Given agent "splitter" responds:
      """
      {"chunks": ["alpha", "bad"]}
      """
    And the ensemble:
      """
      name: fan
      agents:
        - {name: splitter, ask: "split?"}
        - name: summarize
          script: fanout/summarize.py
          fan_out: {over: "context.splitter.chunks", on_error: fail}
          dependencies: [splitter]
        - name: fallback
          ask: "what now?"
          dependencies: [{agent_name: summarize, on: failure}]
      """
    And agent "fallback" responds "summarized by hand"
    When the ensemble runs
    Then the run has 2 errors
    And agent "summarize[1]" failed with an error containing "cannot summarize this one"
    And the run has no unhandled errors
    And the exit code is 0
