"""Share links and data export (components/share.py): the buttons and the warning for a bad link setting."""

STRINGS = {
    "en": {
        "share_button": "Share link",
        "share_url": "Link to this tab with these settings",
        "share_download": "Download figure data (JSON)",
        "share_bad_setting": "link setting {setting}={value} ignored: not an allowed value",
    },
    "zh-CN": {
        "share_button": "分享链接",
        "share_url": "带当前设置打开本页的链接",
        "share_download": "下载图表数据（JSON）",
        "share_bad_setting": "已忽略链接中的设置 {setting}={value}：不是允许的值",
    },
}
