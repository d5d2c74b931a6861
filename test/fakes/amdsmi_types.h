/*
 * The part of AMD's public amdsmi.h (include/amd_smi/amdsmi.h of ROCm/amdsmi;
 * docs/reference/gpu-libraries.md#amd-smi) that joulegate's FFI uses: status codes, init flags,
 * handles, enums, the BDF union and structs with the header's field order, types and array
 * sizes. Two generations differ: FAKE_AMDSMI_LIB=24 declares lib 24.6/24.7 (ROCm 6.2/6.3),
 * FAKE_AMDSMI_LIB=26 (the default) lib 26.x (ROCm 7). fake_amdsmi.c implements the functions on
 * these types; struct_layout.c prints their sizes and offsets so test/backends/ffi-layout.test.ts
 * can compare them with koffi's view.
 */
#ifndef JOULEGATE_AMDSMI_TYPES_H
#define JOULEGATE_AMDSMI_TYPES_H

#include <stdint.h>

#ifndef FAKE_AMDSMI_LIB
#define FAKE_AMDSMI_LIB 26
#endif
#if FAKE_AMDSMI_LIB != 24 && FAKE_AMDSMI_LIB != 26
#error "FAKE_AMDSMI_LIB is 24 or 26"
#endif

#define AMDSMI_GPU_UUID_SIZE 38

typedef enum {
  AMDSMI_STATUS_SUCCESS = 0,
  AMDSMI_STATUS_INVAL = 1,
  AMDSMI_STATUS_NOT_SUPPORTED = 2,
  AMDSMI_STATUS_NOT_YET_IMPLEMENTED = 3,
  AMDSMI_STATUS_NO_PERM = 10,
  AMDSMI_STATUS_BUSY = 30,
  AMDSMI_STATUS_NOT_FOUND = 31,
  AMDSMI_STATUS_NOT_INIT = 32,
  AMDSMI_STATUS_INSUFFICIENT_SIZE = 41,
  AMDSMI_STATUS_MAP_ERROR = 0xFFFFFFFE,
  AMDSMI_STATUS_UNKNOWN_ERROR = 0xFFFFFFFF
} amdsmi_status_t;

typedef enum {
  AMDSMI_INIT_ALL_PROCESSORS = 0xFFFFFFFF,
  AMDSMI_INIT_AMD_CPUS = (1 << 0),
  AMDSMI_INIT_AMD_GPUS = (1 << 1),
  AMDSMI_INIT_NON_AMD_CPUS = (1 << 2),
  AMDSMI_INIT_NON_AMD_GPUS = (1 << 3)
} amdsmi_init_flags_t;

typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;

typedef enum {
  AMDSMI_CLK_TYPE_SYS = 0x0,
  AMDSMI_CLK_TYPE_FIRST = AMDSMI_CLK_TYPE_SYS,
  AMDSMI_CLK_TYPE_GFX = AMDSMI_CLK_TYPE_SYS,
  AMDSMI_CLK_TYPE_DF,
  AMDSMI_CLK_TYPE_DCEF,
  AMDSMI_CLK_TYPE_SOC,
  AMDSMI_CLK_TYPE_MEM,
  AMDSMI_CLK_TYPE_PCIE,
  AMDSMI_CLK_TYPE_VCLK0,
  AMDSMI_CLK_TYPE_VCLK1,
  AMDSMI_CLK_TYPE_DCLK0,
  AMDSMI_CLK_TYPE_DCLK1,
  AMDSMI_CLK_TYPE__MAX = AMDSMI_CLK_TYPE_DCLK1
} amdsmi_clk_type_t;

typedef enum {
  AMDSMI_TEMPERATURE_TYPE_EDGE,
  AMDSMI_TEMPERATURE_TYPE_FIRST = AMDSMI_TEMPERATURE_TYPE_EDGE,
  AMDSMI_TEMPERATURE_TYPE_HOTSPOT,
  AMDSMI_TEMPERATURE_TYPE_JUNCTION = AMDSMI_TEMPERATURE_TYPE_HOTSPOT,
  AMDSMI_TEMPERATURE_TYPE_VRAM,
  AMDSMI_TEMPERATURE_TYPE_HBM_0,
  AMDSMI_TEMPERATURE_TYPE_HBM_1,
  AMDSMI_TEMPERATURE_TYPE_HBM_2,
  AMDSMI_TEMPERATURE_TYPE_HBM_3,
  AMDSMI_TEMPERATURE_TYPE_PLX
} amdsmi_temperature_type_t;

typedef enum {
  AMDSMI_TEMP_CURRENT = 0x0,
  AMDSMI_TEMP_FIRST = AMDSMI_TEMP_CURRENT,
  AMDSMI_TEMP_MAX,
  AMDSMI_TEMP_MIN
} amdsmi_temperature_metric_t;

typedef enum {
  AMDSMI_MEM_TYPE_FIRST = 0,
  AMDSMI_MEM_TYPE_VRAM = AMDSMI_MEM_TYPE_FIRST,
  AMDSMI_MEM_TYPE_VIS_VRAM,
  AMDSMI_MEM_TYPE_GTT
} amdsmi_memory_type_t;

typedef union {
  struct bdf_ {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  } bdf;
  struct {
    uint64_t function_number : 3;
    uint64_t device_number : 5;
    uint64_t bus_number : 8;
    uint64_t domain_number : 48;
  };
  uint64_t as_uint;
} amdsmi_bdf_t;

#if FAKE_AMDSMI_LIB == 24
/* Lib 24.x: the first field is the year the version was released in. */
typedef struct {
  uint32_t year;
  uint32_t major;
  uint32_t minor;
  uint32_t release;
  const char *build;
} amdsmi_version_t;

/* Lib 24.x: every member 32 bits wide, no socket_power. */
typedef struct {
  uint32_t current_socket_power;
  uint32_t average_socket_power;
  uint32_t gfx_voltage;
  uint32_t soc_voltage;
  uint32_t mem_voltage;
  uint32_t power_limit;
  uint32_t reserved[11];
} amdsmi_power_info_t;
#else
/* Lib 26.x: no year (dropped in 26.0). */
typedef struct {
  uint32_t major;
  uint32_t minor;
  uint32_t release;
  const char *build;
} amdsmi_version_t;

typedef struct {
  uint64_t socket_power;
  uint32_t current_socket_power;
  uint32_t average_socket_power;
  uint64_t gfx_voltage;
  uint64_t soc_voltage;
  uint64_t mem_voltage;
  uint32_t power_limit;
  uint64_t reserved[18];
} amdsmi_power_info_t;
#endif

typedef struct {
  uint32_t clk;
  uint32_t min_clk;
  uint32_t max_clk;
  uint8_t clk_locked;
  uint8_t clk_deep_sleep;
  uint32_t reserved[4];
} amdsmi_clk_info_t;

typedef struct {
  uint32_t gfx_activity;
  uint32_t umc_activity;
  uint32_t mm_activity;
  uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
  uint64_t power_cap;
  uint64_t default_power_cap;
  uint64_t dpm_cap;
  uint64_t min_power_cap;
  uint64_t max_power_cap;
  uint64_t reserved[3];
} amdsmi_power_cap_info_t;

#endif
