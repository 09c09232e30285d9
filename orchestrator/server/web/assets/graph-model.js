/* The delegation graph as the page sees it: a fold of a session's Agent UI envelopes.
 *
 * Theory of operation
 * -------------------
 * The page never asks the server for "the graph": it folds the same Agent UI envelopes every
 * client is sent (the team channel live, `GET /api/sessions/ID/envelopes` for an ended
 * session, the embedded data of a standalone export). `foldEnvelopes(envelopes, upTo)` is a
 * pure function of its arguments; the live view keeps one model and feeds it envelope by
 * envelope with `applyEnvelope`, which is the same fold one step at a time, so the scrubber
 * ("the graph at fact N"), the live view and the export cannot disagree.
 *
 * The model (plain objects and Maps, no DOM):
 *   nodes: Map id -> node, in the order the stream first mentioned them
 *     kind "chat":     id = the chat URI (threadId); agentName, role, status, parent
 *                      (the delegating chat, parentThreadId), agentId, taskId, title, summary,
 *                      toolCallId (the delegate call that spawned it), usage (set by the
 *                      page: tokens, model calls, time)
 *     kind "remote":   a remote teammate's chat (its envelopes say runtimeEntity
 *                      external_task): a chat node that also keeps its remote task's
 *                      remoteTaskId, remoteStatus (in words) and its card's name, cardName
 *     kind "queued":   id = "queued:" + taskId; a delegation waiting for room in the parallel
 *                      budget (task.changed status "queued" with no chat yet); removed when
 *                      the task's chat is spawned
 *     kind "approval": id = "approval:" + actionId; requestedBy, routedTo, resolvedBy (each
 *                      as people say it: "analyst #3", "alice"), taskTitle (the asker's
 *                      task), decision, toolName, input (the tool call's input, summarised),
 *                      summary, chat (the asking chat), status; a question also questions
 *                      ([{id, kind, message, options}]);
 *                      a question (`question` true) also toolCallId (what an answer names)
 *                      and, answered, its answer
 *   edges: Map id -> {id, kind, source, target, label}
 *     kind "spawn"    parent chat -> worker chat (agent.spawned's parentThreadId)
 *     kind "handoff"  from chat -> to chat (agent.handoff), label its status
 *     kind "resume"   the chat that took a finished worker up again -> that worker
 *     kind "queued"   delegating chat -> queued placeholder
 *     kind "asks"     approval -> the chat that asked
 *     kind "review"   reviewer chat -> the worker chat it reviews, label the last verdict
 *   structure: a counter bumped whenever a node or an edge is added or removed (a status
 *     change leaves it): how a caller tells a change of shape from a restyle.
 *
 * Envelopes at or below the last sequence folded are ignored (a replay overlapping a live
 * feed), as the server's projector does with facts.
 */
(function (root) {
  "use strict";

  const TERMINAL = new Set(["completed", "idle", "failed", "killed", "cancelled"]);

  function createModel() {
    return {
      lastSequence: 0,
      nodes: new Map(),
      edges: new Map(),
      structure: 0,
      run: { status: null, team: null, coordinator: null, prompt: null, result: null, model: null },
      taskChat: new Map(), // taskId -> chat id, for queued placeholders and resumes
    };
  }

  function addNode(model, node) {
    model.nodes.set(node.id, node);
    model.structure += 1;
    return node;
  }

  function addEdge(model, kind, source, target, label) {
    const id = kind + ":" + source + "->" + target;
    if (model.edges.has(id)) {
      if (label) model.edges.get(id).label = label;
      return;
    }
    model.edges.set(id, { id: id, kind: kind, source: source, target: target, label: label || "" });
    model.structure += 1;
  }

  function removeNode(model, id) {
    if (!model.nodes.delete(id)) return;
    for (const [edgeId, edge] of model.edges) {
      if (edge.source === id || edge.target === id) model.edges.delete(edgeId);
    }
    model.structure += 1;
  }

  function chatNode(model, id) {
    let node = model.nodes.get(id);
    if (!node) {
      node = addNode(model, {
        id: id,
        kind: "chat",
        agentName: "?",
        role: "",
        status: "unknown",
        parent: null,
        agentId: null,
        taskId: null,
        title: "",
        summary: "",
        waitingFor: null,
        sequence: 0,
      });
    }
    return node;
  }

  function onAgent(model, env) {
    const payload = env.payload || {};
    const id = env.threadId || payload.chat;
    if (!id) return;
    const known = model.nodes.has(id);
    const node = chatNode(model, id);
    const wasTerminal = known && TERMINAL.has(node.status);
    const previousTask = node.taskId;
    if (!node.sequence) node.sequence = env.sequence;
    if (payload.agentName) node.agentName = payload.agentName;
    if (payload.role !== undefined) node.role = payload.role;
    if (env.agentId) node.agentId = env.agentId;
    if (payload.summary) node.summary = payload.summary;
    node.waitingFor = payload.waitingFor || null;
    if (payload.status) node.status = payload.status;
    if (payload.runtimeEntity === "external_task" && node.kind === "chat") {
      node.kind = "remote";
      model.structure += 1; // drawn as another kind of node
    }
    // The delegate call that spawned it: its round (graph-view.js groups a round's siblings).
    if (env.type === "agent.spawned" && env.toolCallId && !node.toolCallId) node.toolCallId = env.toolCallId;
    if (env.type === "agent.spawned" && env.parentThreadId && !node.parent) {
      node.parent = env.parentThreadId;
      chatNode(model, env.parentThreadId);
      addEdge(model, "spawn", env.parentThreadId, id, "");
    }
    if (env.taskId) {
      node.taskId = env.taskId;
      if (model.taskChat.get(env.taskId) !== id) model.taskChat.set(env.taskId, id);
      removeNode(model, "queued:" + env.taskId);
    }
    // Taken up again: a finished worker running anew, or given another task.
    const resumed =
      (wasTerminal && !TERMINAL.has(node.status) && node.status !== "unknown") ||
      (known && previousTask && env.taskId && previousTask !== env.taskId && env.parentThreadId);
    if (resumed && node.parent !== null) {
      const by = env.parentThreadId || node.parent;
      addEdge(model, "resume", by, id, "resumed");
    }
  }

  function onTask(model, env) {
    const payload = env.payload || {};
    if (!env.taskId) return;
    if (env.threadId) {
      const node = model.nodes.get(env.threadId);
      if (node && payload.title) node.title = payload.title;
      if (node && payload.runtimeEntity === "external_task" && payload.remoteTaskId) {
        // The remote truth: the remote task's state, as its agent said it.
        node.remoteTaskId = payload.remoteTaskId;
        node.remoteStatus = payload.runtimeStatus;
        if (payload.cardName) node.cardName = payload.cardName;
      }
      return;
    }
    const queuedId = "queued:" + env.taskId;
    if (payload.status === "queued" && !model.taskChat.has(env.taskId)) {
      let node = model.nodes.get(queuedId);
      if (!node) {
        node = addNode(model, {
          id: queuedId,
          kind: "queued",
          agentName: payload.agentName || "?",
          role: "",
          status: "queued",
          parent: env.parentThreadId || null,
          taskId: env.taskId,
          title: payload.title || "",
          summary: payload.queueReason || "",
          sequence: env.sequence,
        });
        if (env.parentThreadId) {
          chatNode(model, env.parentThreadId);
          addEdge(model, "queued", env.parentThreadId, queuedId, "queued");
        }
      }
    } else if (payload.status && payload.status !== "queued") {
      // Started (its chat follows), or ended before it ever ran.
      if (payload.status !== "running") removeNode(model, queuedId);
    }
  }

  function onHandoff(model, env) {
    const payload = env.payload || {};
    const from = payload.fromChat;
    const to = payload.toChat || env.threadId;
    if (!from || !to) return;
    const fromNode = chatNode(model, from);
    if (payload.fromAgent && fromNode.agentName === "?") fromNode.agentName = payload.fromAgent;
    const toNode = chatNode(model, to);
    if (payload.toAgent && toNode.agentName === "?") toNode.agentName = payload.toAgent;
    addEdge(model, "handoff", from, to, "handoff " + (payload.status || ""));
  }

  // A review (review.requested / review.completed): the reviewer's chat -> the worker's,
  // labelled with the last round's verdict (one edge per pair: the latest round wins).
  function onReview(model, env) {
    const payload = env.payload || {};
    const reviewer = env.threadId;
    const worker = payload.targetChat;
    if (!reviewer || !worker) return;
    chatNode(model, reviewer);
    chatNode(model, worker);
    const status = (payload.status || "").replace("_", " ");
    addEdge(model, "review", reviewer, worker, "review " + payload.round + ": " + status);
  }

  function onActionRequired(model, env) {
    const payload = env.payload || {};
    if (!env.actionId) return;
    const id = "approval:" + env.actionId;
    const question = payload.actionType !== undefined && payload.actionType !== "delegated_permission"
      && payload.actionType !== "permission";
    if (!model.nodes.has(id)) {
      addNode(model, {
        id: id,
        kind: "approval",
        actionId: env.actionId,
        question: question,
        agentName: payload.toolName || (question ? "question" : "approval"),
        role: "",
        status: "pending",
        parent: env.threadId || null,
        // A name and number ("analyst #3") where the envelope has one, else as recorded.
        requestedBy: payload.requestedByName || payload.requestedBy || "?",
        routedTo: payload.routedToName || payload.routedTo || "?",
        taskTitle: payload.taskTitle || "",
        toolCallId: env.toolCallId || null,
        resolvedBy: null,
        decision: null,
        answer: null,
        toolName: payload.toolName || null,
        // What the asker wants to run (its input, summarised by the daemon), and for a
        // question its parts: [{id, kind, message, options}] (kind text, number, integer,
        // boolean, single-select, multi-select).
        input: payload.inputSummary || "",
        questions: Array.isArray(payload.questions) ? payload.questions : [],
        summary:
          payload.inputSummary ||
          payload.message ||
          (payload.questions || []).map((q) => q.message || q.id).join(" / ") ||
          "",
        sequence: env.sequence,
      });
      if (env.threadId) {
        chatNode(model, env.threadId);
        addEdge(model, "asks", id, env.threadId, "asked by " + model.nodes.get(id).requestedBy);
      }
    }
  }

  function onActionResolved(model, env) {
    const payload = env.payload || {};
    const node = model.nodes.get("approval:" + env.actionId);
    if (!node) return;
    node.decision = payload.decision || payload.response || "resolved";
    node.resolvedBy = payload.resolvedByName || payload.resolvedBy || null;
    if (node.question && payload.response === "accept") {
      // What was answered is what a reader wants, not the protocol's "accept".
      node.answer = payload.answer === undefined ? null : payload.answer;
      node.status = "answered";
    } else node.status = node.decision;
  }

  function onRun(model, env) {
    const payload = env.payload || {};
    if (env.type === "run.started") {
      model.run.status = "running";
      model.run.team = payload.team || model.run.team;
      model.run.coordinator = payload.coordinator || model.run.coordinator;
      model.run.prompt = payload.prompt || model.run.prompt;
      // The model chosen when the session was opened (recorded: kept across restarts).
      model.run.model = payload.model || model.run.model;
    } else {
      model.run.status = payload.status || (env.type === "run.failed" ? "failed" : "finished");
      model.run.result = payload.result || payload.error || null;
    }
  }

  const HANDLERS = {
    "agent.spawned": onAgent,
    "agent.changed": onAgent,
    "agent.completed": onAgent,
    "agent.failed": onAgent,
    "task.changed": onTask,
    "agent.handoff": onHandoff,
    "review.requested": onReview,
    "review.completed": onReview,
    "action.required": onActionRequired,
    "action.resolved": onActionResolved,
    "run.started": onRun,
    "run.finished": onRun,
    "run.failed": onRun,
  };

  /** Fold one envelope into `model` (in place). Returns true when it was folded. */
  function applyEnvelope(model, env) {
    if (!env || typeof env.sequence !== "number" || env.sequence <= model.lastSequence) {
      return false;
    }
    model.lastSequence = env.sequence;
    const handler = HANDLERS[env.type];
    if (handler) handler(model, env);
    return true;
  }

  /** The model of `envelopes` folded in order, up to and including sequence `upTo`. */
  function foldEnvelopes(envelopes, upTo) {
    const model = createModel();
    const limit = upTo === undefined ? Infinity : upTo;
    for (const env of envelopes) {
      if (env.sequence > limit) break;
      applyEnvelope(model, env);
    }
    return model;
  }

  /** Rows for the accessible table: every node, in first-mentioned order. */
  function tableRows(model) {
    const rows = [];
    for (const node of model.nodes.values()) {
      const parent = node.parent ? model.nodes.get(node.parent) : null;
      rows.push({
        id: node.id,
        kind: node.kind,
        agent:
          node.kind === "approval"
            ? (node.question ? "question" : "approval") + " " + (node.toolName || "")
            : node.agentName,
        role:
          node.kind === "approval"
            ? "asked by " + node.requestedBy + ", routed to " + node.routedTo
            : node.role,
        status: statusText(node),
        parent: parent ? parent.agentName + (parent.agentId ? " " + parent.agentId.replace(/^[^#]*#/, "#") : "") : "",
        agentId: node.agentId || "",
      });
    }
    return rows;
  }

  /** The status as words (colour is never the only carrier). */
  function statusText(node) {
    if (node.kind === "approval") {
      if (node.status === "pending") return "pending (routed to " + node.routedTo + ")";
      if (node.status === "answered") return node.answer === null ? "answered" : "answered: " + node.answer;
      return node.status + (node.resolvedBy ? " by " + node.resolvedBy : "");
    }
    // A conversation's coordinator between prompts (and any member done with its turn).
    if (node.status === "idle" && node.waitingFor === "message") return "idle (waiting for the next message)";
    if (node.waitingFor) return node.status + " (" + node.waitingFor + ")";
    if (node.kind === "remote" && node.remoteStatus) {
      return node.status + " (remote: " + node.remoteStatus.replace("_", " ") + ")";
    }
    return node.status;
  }

  /** A one-line summary for the graph's aria-label. */
  function describe(model) {
    const counts = {};
    let chats = 0;
    for (const node of model.nodes.values()) {
      if (node.kind === "chat" || node.kind === "remote") chats += 1;
      counts[node.kind + ":" + node.status] = (counts[node.kind + ":" + node.status] || 0) + 1;
    }
    const approvals = [...model.nodes.values()].filter((n) => n.kind === "approval");
    const pending = approvals.filter((n) => n.status === "pending").length;
    const queued = [...model.nodes.values()].filter((n) => n.kind === "queued").length;
    return (
      "Delegation graph: " + chats + " chats, " + queued + " queued, " +
      approvals.length + " approvals (" + pending + " pending), " + model.edges.size + " edges"
    );
  }

  const api = {
    createModel: createModel,
    applyEnvelope: applyEnvelope,
    foldEnvelopes: foldEnvelopes,
    tableRows: tableRows,
    statusText: statusText,
    describe: describe,
  };
  root.Orchestrator = root.Orchestrator || {};
  root.Orchestrator.graphModel = api;
})(typeof window !== "undefined" ? window : globalThis);
