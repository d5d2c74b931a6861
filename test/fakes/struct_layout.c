/*
 * Prints the C compiler's view of the vendor types the fakes declare (nvml_types.h,
 * amdsmi_types.h, for the AMD SMI generation FAKE_AMDSMI_LIB names): one line per struct size,
 * field offset, scalar type size and constant.
 * test/backends/ffi-layout.test.ts compiles it and compares every line with koffi's view of the
 * FFI declarations in src/backends/{nvml,amdsmi}/ffi.ts.
 *
 *   struct <name> <sizeof>
 *   field <struct> <member> <offsetof> <sizeof member>
 *   type <name> <sizeof>
 *   const <name> <value>
 */
#include <stddef.h>
#include <stdio.h>

#include "amdsmi_types.h"
#include "nvml_types.h"

#define STRUCT(T) printf("struct %s %zu\n", #T, sizeof(T))
#define FIELD(T, m) printf("field %s %s %zu %zu\n", #T, #m, offsetof(T, m), sizeof(((T *)0)->m))
#define TYPE(T) printf("type %s %zu\n", #T, sizeof(T))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void) {
  STRUCT(nvmlUtilization_t);
  FIELD(nvmlUtilization_t, gpu);
  FIELD(nvmlUtilization_t, memory);

  STRUCT(nvmlMemory_t);
  FIELD(nvmlMemory_t, total);
  FIELD(nvmlMemory_t, free);
  FIELD(nvmlMemory_t, used);

  STRUCT(nvmlProcessUtilizationSample_t);
  FIELD(nvmlProcessUtilizationSample_t, pid);
  FIELD(nvmlProcessUtilizationSample_t, timeStamp);
  FIELD(nvmlProcessUtilizationSample_t, smUtil);
  FIELD(nvmlProcessUtilizationSample_t, memUtil);
  FIELD(nvmlProcessUtilizationSample_t, encUtil);
  FIELD(nvmlProcessUtilizationSample_t, decUtil);

  STRUCT(nvmlPciInfo_t);
  FIELD(nvmlPciInfo_t, busIdLegacy);
  FIELD(nvmlPciInfo_t, domain);
  FIELD(nvmlPciInfo_t, bus);
  FIELD(nvmlPciInfo_t, device);
  FIELD(nvmlPciInfo_t, pciDeviceId);
  FIELD(nvmlPciInfo_t, pciSubSystemId);
  FIELD(nvmlPciInfo_t, busId);

  STRUCT(nvmlTemperature_t);
  FIELD(nvmlTemperature_t, version);
  FIELD(nvmlTemperature_t, sensorType);
  FIELD(nvmlTemperature_t, temperature);

  TYPE(nvmlReturn_t);
  TYPE(nvmlDevice_t);
  TYPE(nvmlClockType_t);
  TYPE(nvmlTemperatureSensors_t);
  TYPE(nvmlPcieUtilCounter_t);

  CONST(NVML_SUCCESS);
  CONST(NVML_ERROR_UNINITIALIZED);
  CONST(NVML_ERROR_INVALID_ARGUMENT);
  CONST(NVML_ERROR_NOT_SUPPORTED);
  CONST(NVML_ERROR_NO_PERMISSION);
  CONST(NVML_CLOCK_GRAPHICS);
  CONST(NVML_CLOCK_SM);
  CONST(NVML_CLOCK_MEM);
  CONST(NVML_CLOCK_VIDEO);
  CONST(NVML_TEMPERATURE_GPU);
  CONST(NVML_PCIE_UTIL_TX_BYTES);
  CONST(NVML_PCIE_UTIL_RX_BYTES);
  CONST(NVML_DEVICE_NAME_V2_BUFFER_SIZE);
  CONST(NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  CONST(nvmlTemperature_v1);

  STRUCT(amdsmi_version_t);
#if FAKE_AMDSMI_LIB == 24
  FIELD(amdsmi_version_t, year);
#endif
  FIELD(amdsmi_version_t, major);
  FIELD(amdsmi_version_t, minor);
  FIELD(amdsmi_version_t, release);
  FIELD(amdsmi_version_t, build);

  STRUCT(amdsmi_power_info_t);
#if FAKE_AMDSMI_LIB == 26
  FIELD(amdsmi_power_info_t, socket_power);
#endif
  FIELD(amdsmi_power_info_t, current_socket_power);
  FIELD(amdsmi_power_info_t, average_socket_power);
  FIELD(amdsmi_power_info_t, gfx_voltage);
  FIELD(amdsmi_power_info_t, soc_voltage);
  FIELD(amdsmi_power_info_t, mem_voltage);
  FIELD(amdsmi_power_info_t, power_limit);
  FIELD(amdsmi_power_info_t, reserved);

  STRUCT(amdsmi_engine_usage_t);
  FIELD(amdsmi_engine_usage_t, gfx_activity);
  FIELD(amdsmi_engine_usage_t, umc_activity);
  FIELD(amdsmi_engine_usage_t, mm_activity);
  FIELD(amdsmi_engine_usage_t, reserved);

  STRUCT(amdsmi_clk_info_t);
  FIELD(amdsmi_clk_info_t, clk);
  FIELD(amdsmi_clk_info_t, min_clk);
  FIELD(amdsmi_clk_info_t, max_clk);
  FIELD(amdsmi_clk_info_t, clk_locked);
  FIELD(amdsmi_clk_info_t, clk_deep_sleep);
  FIELD(amdsmi_clk_info_t, reserved);

  STRUCT(amdsmi_power_cap_info_t);
  FIELD(amdsmi_power_cap_info_t, power_cap);
  FIELD(amdsmi_power_cap_info_t, default_power_cap);
  FIELD(amdsmi_power_cap_info_t, dpm_cap);
  FIELD(amdsmi_power_cap_info_t, min_power_cap);
  FIELD(amdsmi_power_cap_info_t, max_power_cap);
  FIELD(amdsmi_power_cap_info_t, reserved);

  TYPE(amdsmi_status_t);
  TYPE(amdsmi_processor_handle);
  TYPE(amdsmi_socket_handle);
  TYPE(amdsmi_bdf_t);
  TYPE(amdsmi_clk_type_t);
  TYPE(amdsmi_temperature_type_t);
  TYPE(amdsmi_temperature_metric_t);
  TYPE(amdsmi_memory_type_t);

  CONST(AMDSMI_STATUS_SUCCESS);
  CONST(AMDSMI_STATUS_INVAL);
  CONST(AMDSMI_STATUS_NOT_SUPPORTED);
  CONST(AMDSMI_STATUS_NO_PERM);
  CONST(AMDSMI_INIT_AMD_GPUS);
  CONST(AMDSMI_CLK_TYPE_SYS);
  CONST(AMDSMI_CLK_TYPE_MEM);
  CONST(AMDSMI_TEMPERATURE_TYPE_EDGE);
  CONST(AMDSMI_TEMPERATURE_TYPE_HOTSPOT);
  CONST(AMDSMI_TEMP_CURRENT);
  CONST(AMDSMI_MEM_TYPE_VRAM);
  CONST(AMDSMI_GPU_UUID_SIZE);
  return 0;
}
