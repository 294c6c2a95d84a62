// How the pods of an InferenceDeployment get the model (private to the builders).
//
// pvc:// and hostpath:/// checkpoints are mounted read-only at /models. hf:// and
// https:// checkpoints are pulled by an init container `pull-model` (the same image,
// `orca model pull URI /models/pulled [--sha256 HEX]`) into an emptyDir mounted at
// /models, so a pod restart of the main container does not pull again, and a pod only
// starts serving once the whole model is there (the pull writes atomically). Both the
// scheduler (it loads the tokenizer and the model's config) and every worker pull.
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "controller/api/spec.h"

namespace orca::controller {

inline constexpr char kModelMount[] = "/models";
inline constexpr char kPulledModelDir[] = "/models/pulled";
inline constexpr char kModelVolume[] = "model";

// Returns the engine's model directory (engine.yaml model.dir) inside the pods.
std::string ModelDir(const ModelSource& src);

// Returns the pod volume named kModelVolume: the claim, the host path, or an emptyDir
// (sizeLimit: model.downloadSizeLimit when set) for pulled models.
Json ModelVolume(const InferenceDeploymentSpec& spec);

// Returns the `pull-model` init container for a pod whose main container is `main`
// (same image, pull policy and securityContext) and whose user env is `settings.env`
// (HF_ENDPOINT, proxies), with HF_TOKEN from model.tokenSecret; null Json when the
// model is mounted rather than pulled.
Json PullModelInitContainer(const InferenceDeploymentSpec& spec, const PodSettings& settings,
                            const Json& main);

}  // namespace orca::controller
