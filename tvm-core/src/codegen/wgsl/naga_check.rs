//! The printed WGSL through naga, in the compiler's process: parsed and validated as
//! wgpu validates it before running it (so a printer bug is a compile-time error of the
//! target, never a shader the device rejects), and translated to the Metal Shading
//! Language, as wgpu's Metal backend translates it on macOS (`source("metal")`).

use super::super::CodegenError;
use naga::back::msl;
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// The module `wgsl` parsed and validated with every check wgpu makes, or naga's
/// message.
fn parse_and_validate(wgsl: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), CodegenError> {
    let invalid = |msg: String| CodegenError::Unsupported { what: format!("WGSL that naga rejects: {msg}") };
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| invalid(e.emit_to_string(wgsl)))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(&module)
        .map_err(|e| invalid(e.emit_to_string(wgsl)))?;
    Ok((module, info))
}

/// `Ok` if naga parses and validates `wgsl` (no capability beyond core WebGPU).
pub fn validate(wgsl: &str) -> Result<(), CodegenError> {
    parse_and_validate(wgsl).map(|_| ())
}

/// The WGSL module `wgsl` as Metal Shading Language 2.1, with wgpu's Metal options.
pub fn to_msl(wgsl: &str) -> Result<String, CodegenError> {
    validated_msl(wgsl)?
}

/// `wgsl` validated (the outer `Err`: naga rejects it), and its MSL (the inner `Err`: the
/// MSL writer failed), parsed once.
pub fn validated_msl(wgsl: &str) -> Result<Result<String, CodegenError>, CodegenError> {
    let (module, info) = parse_and_validate(wgsl)?;
    Ok(msl_of(&module, &info))
}

/// A validated module as Metal Shading Language 2.1 (what wgpu's Metal backend asks for
/// on current macOS), each resource in the buffer slot of its binding number and the
/// sizes of runtime-sized arrays, which the bounds checks need, in the slot after the
/// last of them.
fn msl_of(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Result<String, CodegenError> {
    let mut map = msl::EntryPointResourceMap::default();
    for (i, ep) in module.entry_points.iter().enumerate() {
        let mut resources = msl::EntryPointResources::default();
        let mut next = 0u8;
        for (handle, var) in module.global_variables.iter() {
            let (Some(binding), false) = (&var.binding, info.get_entry_point(i)[handle].is_empty()) else { continue };
            let slot = u8::try_from(binding.binding).map_err(|_| CodegenError::Unsupported {
                what: format!("binding {} in Metal (buffer slots stop at 255)", binding.binding),
            })?;
            resources.resources.insert(binding.clone(), msl::BindTarget { buffer: Some(slot), ..Default::default() });
            next = next.max(slot.saturating_add(1));
        }
        resources.sizes_buffer = Some(next);
        map.insert(ep.name.clone(), resources);
    }
    // wgpu's checks: an index outside an array or a buffer is clamped into it.
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let options = msl::Options {
        lang_version: (2, 1),
        per_entry_point_map: map,
        fake_missing_bindings: false,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: restrict,
            buffer: restrict,
            image_load: restrict,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        ..Default::default()
    };
    let pipeline = msl::PipelineOptions::default();
    msl::write_string(module, info, &options, &pipeline)
        .map(|(text, _)| text)
        .map_err(|e| CodegenError::Unsupported { what: format!("this WGSL in MSL: {e}") })
}
